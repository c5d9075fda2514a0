// FlowStateManager: flownodes' flow-state reports, per node and aggregated,
// and what the leader knows about each flownode.
#ifndef METASRV_CORE_FLOW_STATE_MANAGER_H_
#define METASRV_CORE_FLOW_STATE_MANAGER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/btree_set.h"
#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "core/clock.h"
#include "core/flow_aggregate.h"
#include "core/flow_state_value.h"
#include "core/flownode_record.h"
#include "kv/kv_backend.h"
#include "kv/mutex.h"

namespace metasrv::core {

// What one heartbeat of a flownode says.
struct NodeHeartbeat {
  std::string peer_addr;                 // Empty: keep the last known.
  std::optional<NodeInfo> info;          // nullopt: keep the last known.
  std::optional<FlowStateValue> report;  // nullopt: it carried no report.
};

// One flownode as ListFlownodes() shows it.
struct FlownodeView {
  uint64_t node_id = 0;     // Its id.
  FlownodeRecord record;    // Where it is, when it was heard from, its info.
  uint64_t flow_count = 0;  // Flows in its latest report.
};

// What ForgetFlows() did.
struct ForgetResult {
  uint64_t forgotten_flows = 0;  // Flows asked for that the aggregate held.
  uint64_t updated_nodes = 0;    // Node reports rewritten without them.
};

// Told when the aggregate may have changed: a report merged, a reset, an
// expiry, a ForgetFlows(). Called without the manager's lock held, from the
// thread that made the change; must be quick and must not call the manager.
class FlowStateListener {
 public:
  virtual ~FlowStateListener() = default;
  virtual void OnFlowStateChanged() = 0;
};

// Keeps each flownode's latest report under `__flow/state/node/{id}` in the
// in-memory KV, its record (flownode_record.h) under `__metasrv/flownode/{id}`,
// and the aggregate over all nodes (per flow, the max of each field) under
// `__flow/state`.
//
// The KV keys are the truth; the manager also keeps an index of them and the
// aggregate incrementally, so a merge costs O(report) instead of re-reading
// every node. The aggregate's key holds a lazy value: its JSON is built when
// read, and a raw KV read of `__flow/state` shows the same bytes Get()
// decodes. The index belongs to one KV generation: when the KV was reset (a
// leader change), the next call drops it and rebuilds it from what the KV
// then holds, so no state outlives a reset.
//
// Thread safety: all methods may be called concurrently. Changes are
// serialized by one lock, held for O(change) work; readers take it briefly.
class FlowStateManager {
 public:
  struct Options {
    const Clock* clock = SystemClock();  // Times heartbeats; borrowed.
    // A node silent for longer loses its report and record when
    // ExpireSilentNodes() runs. Zero: never (GreptimeDB's behaviour).
    absl::Duration node_report_ttl = absl::ZeroDuration();
    // Flownodes known at once: a heartbeat of a new node past it is refused
    // with kResourceExhausted. 0: no limit.
    uint64_t max_nodes = 0;
    // (node, flow) entries over all reports: a report that would grow the
    // total past it is refused with kResourceExhausted. 0: no limit.
    uint64_t max_total_flows = 0;
  };

  // Borrows `kv` and the clock, which must outlive the manager.
  explicit FlowStateManager(kv::KvBackend* kv)
      : FlowStateManager(kv, Options()) {}
  FlowStateManager(kv::KvBackend* kv, Options options);
  FlowStateManager(const FlowStateManager&) = delete;
  FlowStateManager& operator=(const FlowStateManager&) = delete;

  // Sets who is told about changes (null: nobody). Borrowed; it must outlive
  // the manager or be unset first.
  void SetListener(FlowStateListener* listener) { listener_.store(listener); }

  // Returns the value under `__flow/state`, or nullopt when there is none
  // (before the first merge or put, and after a reset). An error if the KV
  // fails or holds a malformed value.
  absl::StatusOr<std::optional<FlowStateValue>> Get() const;

  // Writes `value` under `__flow/state` as is. The next merge replaces it with
  // the aggregate of the per-node reports.
  absl::Status Put(const FlowStateValue& value);

  // Records a heartbeat of node `node_id` at the clock's now: updates its
  // record and, with a report, replaces its previous report unconditionally
  // (arrival order wins; no epoch is compared) and updates the aggregate. An
  // empty report removes the node's flows. When this returns OK, reads and
  // the KV show the result.
  //
  // With `kv_generation` set, the heartbeat is refused with kAborted (and
  // nothing written) unless the KV is still at that generation: the caller
  // decided to record it while leading, and a reset since means it stepped
  // down. kResourceExhausted (naming the limit; nothing written) for a new
  // node past Options::max_nodes, or a report that would grow the entries
  // past Options::max_total_flows.
  absl::Status Heartbeat(uint64_t node_id, NodeHeartbeat heartbeat,
                         std::optional<uint64_t> kv_generation = std::nullopt);

  // Heartbeat() with only a report.
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

  // The flownodes heard from in this KV generation (all, or those of
  // `node_ids`), ascending by id.
  absl::StatusOr<std::vector<FlownodeView>> ListFlownodes(
      absl::Span<const uint64_t> node_ids) const;

  // Removes `flow_ids` from every node's report and so from the aggregate.
  // kInvalidArgument when `flow_ids` is empty.
  absl::StatusOr<ForgetResult> ForgetFlows(absl::Span<const uint32_t> flow_ids);

  // Removes the report and record of every node whose last heartbeat is
  // older than the TTL, and returns how many. 0 when the TTL is zero.
  absl::StatusOr<uint64_t> ExpireSilentNodes();

  // Drops the index now if the KV was reset since it was built, freeing its
  // memory without waiting for the next call, and tells the listener. Call
  // after resetting the KV.
  absl::Status Sync();

  // Flownodes known (with a record or a report), and flows in the aggregate.
  uint64_t node_count() const;
  uint64_t flow_count() const;

 private:
  // A node's record as the KV holds it: a lazy value that heartbeats update
  // in place, so a heartbeat writes its record key only when the node is new
  // to the index. Its lock is a leaf: taken under the manager's, or alone by
  // a KV reader.
  class LiveRecord final : public kv::Value {
   public:
    explicit LiveRecord(FlownodeRecord record) : record_(std::move(record)) {}
    std::string Read() const override {
      return EncodeFlownodeRecord(Snapshot());
    }
    FlownodeRecord Snapshot() const {
      MutexLock lock(&mu_);
      return record_;
    }
    void Update(absl::FunctionRef<void(FlownodeRecord&)> change) {
      MutexLock lock(&mu_);
      change(record_);
    }

   private:
    mutable Mutex mu_;                            // Guards record_.
    FlownodeRecord record_ ABSL_GUARDED_BY(mu_);  // The record now.
  };

  // One node's index entry: what its two keys hold.
  struct NodeEntry {
    std::shared_ptr<LiveRecord> record;  // Under its record key (once written).
    bool record_in_kv = false;  // Whether the KV holds `record` itself.
    // Its last heartbeat on the monotonic clock, for by_silence_.
    int64_t heartbeat_mono_ms = 0;
    FlowStateValue report;  // Under its report key (empty if none).
  };
  // A change to write: its mutations, and what to do to the index once they
  // are written. Built and applied under mu_.
  struct Change {
    std::vector<kv::Mutation> batch;  // The KV writes.
    bool touches_aggregate = false;   // Whether aggregate flows change.
    absl::Status refused;             // Not OK: write nothing, return this.
  };

  // Rebuilds the index if the KV generation moved since it was built.
  absl::Status SyncLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Writes the change `plan` builds from a synced index (if any), then runs
  // `apply`; retries both when a reset intervenes. With `kv_generation`,
  // kAborted (naming `what()`) once the KV moved past it.
  absl::Status CommitLocked(std::optional<uint64_t> kv_generation,
                            absl::FunctionRef<std::string()> what,
                            absl::FunctionRef<Change()> plan,
                            absl::FunctionRef<void()> apply)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // OK if node `node` (`entry`, null when new) may send a report of
  // `report_flows` flows (0: no report); else kResourceExhausted.
  absl::Status CheckCapacityLocked(uint64_t node, const NodeEntry* entry,
                                   uint64_t report_flows) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Node `node`'s entry, created if new, with its last heartbeat set to
  // `mono_ms` (monotonic clock) and the silence order kept.
  NodeEntry& EntryLocked(uint64_t node, int64_t mono_ms)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Tells the listener, if any.
  void Notify() const;
  int64_t NowMs() const { return absl::ToUnixMillis(options_.clock->Now()); }
  int64_t MonoMs() const {
    return absl::ToUnixMillis(options_.clock->Monotonic());
  }

  kv::KvBackend* const kv_;  // The in-memory KV; borrowed.
  const Options options_;    // Clock and TTL.
  std::atomic<FlowStateListener*> listener_{nullptr};  // Told of changes.
  mutable Mutex mu_;  // Serializes changes; guards the fields below.
  // KV generation the index was built for; nullopt before the first build.
  mutable std::optional<uint64_t> generation_ ABSL_GUARDED_BY(mu_);
  // Each known node's keys, as stored.
  mutable absl::flat_hash_map<uint64_t, NodeEntry> nodes_ ABSL_GUARDED_BY(mu_);
  // (last heartbeat on the monotonic clock in ms, node) of every node, oldest
  // first; kept only with a TTL, so expiry looks at the expired nodes only
  // and a wall-clock step cannot expire everyone.
  mutable absl::btree_set<std::pair<int64_t, uint64_t>> by_silence_
      ABSL_GUARDED_BY(mu_);
  // The aggregate of the reports. Shared with the lazy KV value that reads it.
  mutable std::shared_ptr<FlowAggregate> aggregate_ ABSL_GUARDED_BY(mu_);
  // The lazy value of `__flow/state` that encodes aggregate_.
  mutable kv::ValuePtr aggregate_value_ ABSL_GUARDED_BY(mu_);
  // (node, flow) entries over all nodes' reports.
  mutable uint64_t total_flows_ ABSL_GUARDED_BY(mu_) = 0;
  // Whether the KV's `__flow/state` is aggregate_value_ (false before the
  // first merge of a generation and after a Put()).
  mutable bool global_is_aggregate_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace metasrv::core

#endif  // METASRV_CORE_FLOW_STATE_MANAGER_H_
