// FlowStateManager: flownodes' flow-state reports, per node and aggregated.
#ifndef METASRV_CORE_FLOW_STATE_MANAGER_H_
#define METASRV_CORE_FLOW_STATE_MANAGER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "kv/mutex.h"
#include "absl/types/span.h"
#include "core/flow_aggregate.h"
#include "core/flow_state_value.h"
#include "kv/kv_backend.h"

namespace metasrv::core {

// Keeps each flownode's latest report under `__flow/state/node/{id}` in the
// in-memory KV and the aggregate over all nodes (per flow, the max of each
// field) under `__flow/state`.
//
// The per-node keys are the truth; the manager also keeps an index of them and
// the aggregate incrementally, so a merge costs O(report) instead of
// re-reading every node. The aggregate's key holds a lazy value: its JSON is
// built when read, and a raw KV read of `__flow/state` shows the same bytes
// Get() decodes. The index belongs to one KV generation: when the KV was reset
// (a leader change), the next call drops it and rebuilds it from what the KV
// then holds, so no state outlives a reset.
//
// Thread safety: all methods may be called concurrently. Merges are serialized
// by one lock, held for O(report) work; readers take it only briefly.
class FlowStateManager {
 public:
  // Borrows `kv`, which must outlive the manager.
  explicit FlowStateManager(kv::KvBackend* kv);
  FlowStateManager(const FlowStateManager&) = delete;
  FlowStateManager& operator=(const FlowStateManager&) = delete;

  // Returns the value under `__flow/state`, or nullopt when there is none
  // (before the first merge or put, and after a reset). An error if the KV
  // fails or holds a malformed value.
  absl::StatusOr<std::optional<FlowStateValue>> Get() const;

  // Writes `value` under `__flow/state` as is. The next merge replaces it with
  // the aggregate of the per-node reports.
  absl::Status Put(const FlowStateValue& value);

  // Records `report` as node `node_id`'s latest, replacing its previous one
  // unconditionally (arrival order wins; no epoch or clock is compared), and
  // updates the aggregate. An empty report removes the node's flows. When this
  // returns OK, Get() and a KV read of `__flow/state` show the result.
  //
  // With `kv_generation` set, the merge is refused with kAborted (and nothing
  // written) unless the KV is still at that generation: the caller decided to
  // merge while leading, and a reset since then means it stepped down.
  absl::Status Merge(uint64_t node_id, FlowStateValue report,
                     std::optional<uint64_t> kv_generation = std::nullopt);

  // The aggregate's flows (all, or those of `flow_ids` that exist), with the
  // node holding each max; nullopt like Get(). After a Put(), the nodes are 0.
  absl::StatusOr<std::optional<std::vector<AggregateFlow>>> Read(
      absl::Span<const uint32_t> flow_ids) const;

  // Read() in batches: calls `visit` with runs of flows, ascending by id, and
  // returns whether there is any flow state (false like Get()'s nullopt).
  // `visit` must not call into the manager.
  absl::StatusOr<bool> Visit(absl::Span<const uint32_t> flow_ids,
                             const FlowAggregate::Visitor& visit) const;

  // Drops the index now if the KV was reset since it was built, freeing its
  // memory without waiting for the next call. Call after resetting the KV.
  absl::Status Sync();

  // Nodes with a report, and flows in the aggregate.
  uint64_t node_count() const;
  uint64_t flow_count() const;

 private:
  // Rebuilds the index if the KV generation moved since it was built.
  absl::Status SyncLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  kv::KvBackend* const kv_;  // The in-memory KV; borrowed.
  mutable Mutex mu_;   // Serializes merges; guards the fields below.
  // KV generation the index was built for; nullopt before the first build.
  mutable std::optional<uint64_t> generation_ ABSL_GUARDED_BY(mu_);
  // Each node's latest report, as stored under its key.
  mutable absl::flat_hash_map<uint64_t, FlowStateValue> nodes_
      ABSL_GUARDED_BY(mu_);
  // The aggregate of nodes_. Shared with the lazy KV value that reads it.
  mutable std::shared_ptr<FlowAggregate> aggregate_ ABSL_GUARDED_BY(mu_);
  // The lazy value of `__flow/state` that encodes aggregate_.
  mutable kv::ValuePtr aggregate_value_ ABSL_GUARDED_BY(mu_);
  // Whether the KV's `__flow/state` is aggregate_value_ (false before the
  // first merge of a generation and after a Put()).
  mutable bool global_is_aggregate_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace metasrv::core

#endif  // METASRV_CORE_FLOW_STATE_MANAGER_H_
