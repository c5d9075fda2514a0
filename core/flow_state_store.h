// FlowStateStore: the flow state of one leadership term, as plain data.
#ifndef METASRV_CORE_FLOW_STATE_STORE_H_
#define METASRV_CORE_FLOW_STATE_STORE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/btree_set.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/types/span.h"
#include "core/flow_aggregate.h"
#include "core/flow_state_value.h"
#include "core/flownode_record.h"
#include "kv/kv_store.h"

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

// Every flownode's latest report and record, the aggregate over the reports
// (per flow, the max of each field), the silence order of the nodes, and the
// in-memory KV that shows them: each report's JSON under
// `__flow/state/node/{id}`, each record's (flownode_record.h) under
// `__metasrv/flownode/{id}`. The aggregate's JSON, `__flow/state`, is built
// from a snapshot of the aggregate when read (each chunk view caches its
// part). The store
// is the KV's only writer, and every change updates the KV and the index in
// the same call, so they cannot disagree.
//
// Not thread-safe: FlowStateManager owns one and does the locking. Const
// methods may run concurrently with each other. Movable: a leader change
// swaps the whole store for an empty one.
class FlowStateStore {
 public:
  struct Limits {
    // Flownodes known at once; 0: no limit.
    uint64_t max_nodes = 0;
    // (node, flow) entries over all reports; 0: no limit.
    uint64_t max_total_flows = 0;
    // Whether to keep the silence order (needed for ExpireSilent()).
    bool track_silence = false;
  };

  explicit FlowStateStore(Limits limits) : limits_(limits) {}
  FlowStateStore(FlowStateStore&&) = default;
  FlowStateStore& operator=(FlowStateStore&&) = default;

  // Records a heartbeat of `node` at `now_ms` (unix ms; `mono_ms` on the
  // monotonic clock, for the silence order). With a report, `report_json` is
  // its encoding; the report replaces the node's previous one and the
  // aggregate follows. kResourceExhausted, naming the limit and changing
  // nothing, for a new node past Limits::max_nodes or a report that would
  // grow the entries past Limits::max_total_flows.
  absl::Status Heartbeat(uint64_t node, NodeHeartbeat heartbeat,
                         kv::Bytes report_json, int64_t now_ms,
                         int64_t mono_ms);

  // Removes the flows of `sorted_ids` (ascending, unique) from every report.
  ForgetResult ForgetFlows(const std::vector<uint32_t>& sorted_ids);

  // Removes every node last heard from before `cutoff_mono_ms` (monotonic
  // clock) and returns their ids, oldest first. Needs Limits::track_silence.
  std::vector<uint64_t> ExpireSilent(int64_t cutoff_mono_ms);

  // Whether `__flow/state` exists: a report was merged since the store was
  // made.
  bool has_aggregate() const { return has_aggregate_; }
  const FlowAggregate& aggregate() const { return aggregate_; }

  // The node keys of the KV (everything but `__flow/state`).
  const kv::KvStore& node_keys() const { return node_keys_; }
  // Keys in the KV, `__flow/state` included.
  uint64_t key_count() const {
    return node_keys_.size() + (has_aggregate_ ? 1 : 0);
  }

  // The nodes of `node_ids` that are known (all when empty), ascending by id.
  std::vector<FlownodeView> ListFlownodes(
      absl::Span<const uint64_t> node_ids) const;

  uint64_t node_count() const { return nodes_.size(); }

 private:
  // One known node.
  struct NodeEntry {
    FlownodeRecord record;       // Its record, as under its record key.
    FlowStateValue report;       // Its latest report (empty if none).
    int64_t heartbeat_mono = 0;  // Its last heartbeat, monotonic ms.
    // Its keys' slots in node_keys_ (KvStore::Slot); null until written.
    kv::Bytes* record_slot = nullptr;
    kv::Bytes* report_slot = nullptr;
  };

  // OK if `node` (`entry`, null when new) may send a report of
  // `report_flows` flows (0: no report); else kResourceExhausted.
  absl::Status CheckCapacity(uint64_t node, const NodeEntry* entry,
                             uint64_t report_flows) const;
  // Replaces `node`'s report with `report` (encoded as `json`) everywhere.
  void SetReport(uint64_t node, NodeEntry& entry, FlowStateValue report,
                 kv::Bytes json);
  // Moves `node` to `mono_ms` in the silence order.
  void Touch(uint64_t node, NodeEntry& entry, int64_t mono_ms);

  Limits limits_;                                   // Capacity and expiry.
  absl::flat_hash_map<uint64_t, NodeEntry> nodes_;  // Known nodes by id.
  // (last heartbeat in monotonic ms, node) of every node, oldest first;
  // kept only with Limits::track_silence.
  absl::btree_set<std::pair<int64_t, uint64_t>> by_silence_;
  FlowAggregate aggregate_;     // The aggregate of the reports.
  kv::KvStore node_keys_;       // The node keys' bytes.
  uint64_t total_flows_ = 0;    // (node, flow) entries over all reports.
  bool has_aggregate_ = false;  // Whether a report was merged.
};

}  // namespace metasrv::core

#endif  // METASRV_CORE_FLOW_STATE_STORE_H_
