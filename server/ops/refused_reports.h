// The flownodes whose latest report was refused, and why: which limit
// (--max_nodes, --max_total_flows, --max_flows_per_report) or a malformed
// extension. What `metasrvctl nodes` shows beside the nodes the leader
// holds; a refused node may hold nothing (a new node at --max_nodes).
#ifndef METASRV_SERVER_OPS_REFUSED_REPORTS_H_
#define METASRV_SERVER_OPS_REFUSED_REPORTS_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "core/clock.h"

namespace metasrv::server {

// A node's refusals since its last merged report.
struct Refusal {
  uint64_t node_id = 0;
  std::string why;        // The latest refusal's message, naming the limit.
  uint64_t count = 0;     // Refused reports since its last merged one.
  int64_t last_ms = 0;    // When the latest came, unix ms.
};

// Thread safety: all methods are safe from any thread. Merged() costs one
// atomic load while no node is refused, so the merge path pays nothing.
class RefusedReports {
 public:
  // At most `capacity` nodes are remembered (past it, the one refused
  // longest ago is forgotten); a node not refused for `keep` is forgotten.
  // Borrows `clock`.
  RefusedReports(const core::Clock* clock, size_t capacity = 1024,
                 absl::Duration keep = absl::Minutes(5));

  // `node`'s report was refused with `why`.
  void Refused(uint64_t node, const absl::Status& why);
  // `node`'s report was merged: it is refused no longer.
  void Merged(uint64_t node) {
    if (size_.load(std::memory_order_relaxed) != 0) Forget(node);
  }
  // Refused nodes (of `only`, or all when empty), ascending by id.
  std::vector<Refusal> List(absl::Span<const uint64_t> only) const;

 private:
  void Forget(uint64_t node);

  const core::Clock* const clock_;  // Wall time; borrowed.
  const size_t capacity_;           // Nodes remembered at most.
  const absl::Duration keep_;       // How long a refusal is remembered.
  mutable absl::Mutex mu_;          // Guards refused_.
  absl::flat_hash_map<uint64_t, Refusal> refused_ ABSL_GUARDED_BY(mu_);
  int64_t swept_ms_ ABSL_GUARDED_BY(mu_) = 0;  // When the forgotten went.
  std::atomic<size_t> size_{0};  // refused_.size(), read without mu_.
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_OPS_REFUSED_REPORTS_H_
