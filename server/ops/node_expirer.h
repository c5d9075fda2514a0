// Runs the flow-state core's expiries on a timer: idle nodes' cluster info
// and records (--node_max_idle_time, GreptimeDB's node_max_idle_time), and
// silent flownodes' reports (--node_report_ttl), so they go even when nobody
// reads.
#ifndef METASRV_SERVER_OPS_NODE_EXPIRER_H_
#define METASRV_SERVER_OPS_NODE_EXPIRER_H_

#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/flow_state_manager.h"
#include "server/ops/metrics.h"

namespace metasrv::server {

// Thread safety: Stop() may be called from any thread.
class NodeExpirer {
 public:
  // Calls flow_state->ExpireIdleNodes() and ExpireSilentNodes() every
  // `period` of real time from its own thread, until stopped. Borrows both
  // (null `metrics`: none kept).
  NodeExpirer(core::FlowStateManager* flow_state, absl::Duration period,
              Metrics* metrics);
  ~NodeExpirer() { Stop(); }
  NodeExpirer(const NodeExpirer&) = delete;
  NodeExpirer& operator=(const NodeExpirer&) = delete;

  // Stops the thread; idempotent.
  void Stop();

  // The period for the TTLs (zero: off): a quarter of the shortest set,
  // within [10 ms, 1 s], so a node leaves at most a second after its TTL ran
  // out.
  static absl::Duration PeriodFor(absl::Duration report_ttl,
                                  absl::Duration idle_ttl);

 private:
  void Run();

  core::FlowStateManager* const flow_state_;  // What expires; borrowed.
  const absl::Duration period_;               // Between runs.
  Metrics* const metrics_;  // Borrowed; never null (Metrics::OrDiscard).
  absl::Mutex mu_;          // Guards stopping_.
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;  // Stop() was called.
  std::thread thread_;                          // Runs Run().
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_OPS_NODE_EXPIRER_H_
