// FlowStateManager: the one owner of flow state. It holds the store
// (flow_state_store.h), the lock that guards it and the term, and serves the
// in-memory KV that GreptimeDB's Cluster reads see.
#ifndef METASRV_CORE_FLOW_STATE_MANAGER_H_
#define METASRV_CORE_FLOW_STATE_MANAGER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "core/clock.h"
#include "core/flow_aggregate.h"
#include "core/flow_state_limits.h"
#include "core/flow_state_store.h"
#include "core/flow_state_value.h"
#include "kv/kv_backend.h"
#include "kv/mutex.h"

namespace metasrv::core {

// Told when the aggregate may have changed: a report merged, a reset, an
// expiry, a ForgetFlows(). Called without the manager's lock held, from the
// thread that made the change; must be quick and must not call the manager.
class FlowStateListener {
 public:
  virtual ~FlowStateListener() = default;
  virtual void OnFlowStateChanged() = 0;
};

// What Reset() did.
struct ResetResult {
  uint64_t dropped_keys = 0;  // Keys the KV held before.
  uint64_t term = 0;          // The term that began.
};

// Flownodes' reports, per node and aggregated, what the leader knows about
// each flownode, and the KV of both (see FlowStateStore for the keys).
//
// The term counts resets: a leadership change resets the state (Reset()),
// and a heartbeat the caller decided to accept in an earlier term is refused.
//
// Thread safety: all methods may be called concurrently. One lock guards the
// store and the term: changes hold it exclusively for O(change); reads hold
// it shared, only to copy pointers (to the node keys' immutable bytes, to the
// aggregate's pinned chunk views), and build their answers after releasing
// it. So every read is one instant: the state after some whole number of
// changes, never part of one.
class FlowStateManager final : public kv::KvBackend {
 public:
  // Bounds and expiries as `limits` says, timed on `clock` (borrowed; it
  // must outlive the manager).
  explicit FlowStateManager(FlowStateLimits limits = FlowStateLimits(),
                            const Clock* clock = SystemClock());
  FlowStateManager(const FlowStateManager&) = delete;
  FlowStateManager& operator=(const FlowStateManager&) = delete;

  // Sets who is told about changes (null: nobody). Borrowed; it must outlive
  // the manager or be unset first.
  void SetListener(FlowStateListener* listener) { listener_.store(listener); }

  // Records a heartbeat of node `node_id` at the clock's now: updates its
  // record and, with a report, replaces its previous report unconditionally
  // (arrival order wins; no epoch is compared) and updates the aggregate. An
  // empty report removes the node's flows. When this returns OK, reads and
  // the KV show the result.
  //
  // With `term` set, kAborted (nothing written) unless the state is still in
  // that term: the caller decided to record it while leading, and a reset
  // since means it stepped down. kResourceExhausted (naming the limit;
  // nothing written) past FlowStateLimits::max_nodes or max_total_flows.
  //
  // At max_nodes, a new flownode gets in by forgetting a node that is not
  // live by its reports (FlowStateStore::Evictable: one that never
  // reported, else the one whose last report is oldest and older than
  // FlowStateLimits::live_report_window), as ForgetNodes() would;
  // `*evicted`, when given, is set to it. Below the bound nothing is
  // forgotten: upstream keeps silent nodes' reports.
  absl::Status Heartbeat(uint64_t node_id, NodeHeartbeat heartbeat,
                         std::optional<uint64_t> term = std::nullopt,
                         std::optional<uint64_t>* evicted = nullptr);

  // Heartbeat() with only a report. For tests and benchmarks: the server
  // records every report through Heartbeat().
  absl::Status Merge(uint64_t node_id, FlowStateValue report,
                     std::optional<uint64_t> term = std::nullopt);

  // Records the cluster info of a node that is not a flownode (a flownode's
  // rides in its NodeHeartbeat). kAborted and kResourceExhausted (nothing
  // written) as for Heartbeat().
  absl::Status RecordNode(const ClusterNode& node,
                          std::optional<uint64_t> term = std::nullopt);

  // Removes `flow_ids` from every node's report and so from the aggregate.
  // kInvalidArgument when `flow_ids` is empty.
  absl::StatusOr<ForgetResult> ForgetFlows(absl::Span<const uint32_t> flow_ids);

  // Forgets the flownodes of `node_ids` (FlowStateStore::ForgetNodes): a node
  // removed for good stops counting as silent and its flows leave the
  // aggregate; one that heartbeats again comes back. Returns how many were
  // known. kInvalidArgument when `node_ids` is empty.
  absl::StatusOr<uint64_t> ForgetNodes(absl::Span<const uint64_t> node_ids);

  // Removes the report and record of every node whose last heartbeat (on the
  // monotonic clock) is older than the TTL; returns their ids, oldest first.
  // None when the TTL is zero.
  std::vector<uint64_t> ExpireSilentNodes();

  // Removes the cluster info and flownode records of nodes idle for longer
  // than FlowStateLimits::node_max_idle_time (reports stay). Nothing when it is
  // zero.
  IdleExpiry ExpireIdleNodes();

  // Drops all state and every key (a leadership change) in one step, and
  // begins the next term. The memory is freed after the lock is released.
  ResetResult Reset();

  // The current term: resets so far.
  uint64_t term() const;

  // The aggregate at one instant: every chunk's view, pinned (see
  // FlowAggregate). Holding it costs the memory of the views that changed
  // since; readers use it and let it go.
  struct AggregateSnapshot {
    uint64_t term = 0;   // The term it is of.
    bool found = false;  // Whether there is an aggregate (see Aggregate()).
    std::vector<PinnedChunk> chunks;  // Non-empty chunks, ascending by id.
  };
  // Takes the shared lock for O(chunks), whatever the number of flows.
  AggregateSnapshot Snapshot() const;

  // The aggregate as a value, or nullopt when there is none (before the
  // first report of the term).
  std::optional<FlowStateValue> Aggregate() const;

  // The aggregate's flows (all, or those of `flow_ids` that exist), with the
  // node holding each max, at one instant; nullopt like Aggregate().
  std::optional<std::vector<AggregateFlow>> Read(
      absl::Span<const uint32_t> flow_ids) const;

  // Read() in batches: calls `visit` with runs of flows, ascending by id,
  // without the lock held, and returns whether there is flow state (false
  // like Aggregate()'s nullopt). Every batch is of the same instant.
  using Visitor = std::function<void(absl::Span<const AggregateFlow>)>;
  bool Visit(absl::Span<const uint32_t> flow_ids, const Visitor& visit) const;

  // The flownodes heard from in this term (all, or those of `node_ids`),
  // ascending by id, at one instant.
  std::vector<FlownodeView> ListFlownodes(
      absl::Span<const uint64_t> node_ids) const;

  // The aggregate at one instant encoded chunk by chunk by `encoder`, which
  // must be the same for an `encoding` every time: each non-empty chunk's
  // bytes, ascending by flow id; nullopt when there is no aggregate. Chunks
  // that did not change since they were last encoded are the cached bytes;
  // the others are encoded without the manager's lock.
  std::optional<std::vector<std::shared_ptr<const std::string>>> EncodeChunks(
      ChunkEncoding encoding, ChunkEncoder encoder) const;
  // EncodeChunks()'s answer, of one instant, when every chunk's bytes are
  // cached for `encoding` already: made without encoding anything, so cheap
  // enough for any caller's thread (O(chunks) pointer copies). false, and
  // `*out` untouched, when some chunk would need encoding.
  bool CachedChunks(
      ChunkEncoding encoding,
      std::optional<std::vector<std::shared_ptr<const std::string>>>* out)
      const;

  // Flownodes known, and flows in the aggregate.
  uint64_t node_count() const;
  uint64_t flow_count() const;

  // kv::KvBackend: the KV the store shows, `__flow/state` built from the
  // aggregate's cached chunk encodings, each read of one instant (the
  // aggregate is the max over exactly the node reports the same read
  // returns). Never fails but for bad ranges.
  absl::StatusOr<std::string> Get(const std::string& key) const override;
  absl::StatusOr<std::vector<kv::KeyValue>> BatchGet(
      const std::vector<std::string>& keys) const override;
  absl::StatusOr<kv::RangeResponse> Range(
      const kv::RangeRequest& req) const override;
  uint64_t size() const override;

 private:
  // What a KV read took under the lock.
  struct Found;

  // Tells the listener, if any.
  void Notify() const;
  // The store's limits, from the options.

  // Turns what a read found into key-values, with the JSON of `__flow/state`
  // encoded from the snapshot taken with the node keys.
  static std::vector<kv::KeyValue> ToKeyValues(Found found);

  const FlowStateLimits limits_;  // Bounds and expiries.
  const Clock* const clock_;      // Times heartbeats; borrowed.
  std::atomic<FlowStateListener*> listener_{nullptr};  // Told of changes.
  mutable Mutex mu_;                           // Guards the store and the term.
  FlowStateStore store_ ABSL_GUARDED_BY(mu_);  // The state.
  uint64_t term_ ABSL_GUARDED_BY(mu_) = 0;     // Resets so far.
};

}  // namespace metasrv::core

#endif  // METASRV_CORE_FLOW_STATE_MANAGER_H_
