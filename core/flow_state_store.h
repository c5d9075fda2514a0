// FlowStateStore: the flow state of one leadership term, as plain data.
#ifndef METASRV_CORE_FLOW_STATE_STORE_H_
#define METASRV_CORE_FLOW_STATE_STORE_H_

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/btree_set.h"
#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/types/span.h"
#include "core/cluster_info.h"
#include "core/flow_aggregate.h"
#include "core/flow_state_limits.h"
#include "core/flow_state_value.h"
#include "core/flownode_record.h"
#include "kv/kv_store.h"

namespace metasrv::core {

// What one heartbeat of a flownode says.
struct NodeHeartbeat {
  std::string peer_addr;                 // Empty: keep the last known.
  std::optional<NodeInfo> info;          // nullopt: keep the last known.
  std::optional<FlowStateValue> report;  // nullopt: it carried no report.
  // Its cluster info, when it carried a header, a peer and a NodeInfo.
  std::optional<ClusterNode> cluster_node;
  // The client host it came from, as the server's shares key hosts; empty:
  // unknown (a node of no host is never taken for another host's).
  std::string origin;
};

// What ExpireIdle() removed.
struct IdleExpiry {
  uint64_t cluster_nodes = 0;  // Cluster-info keys.
  uint64_t records = 0;        // Flownode records (their reports stay).
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
// (per flow, the max of each field), every node's cluster info, the silence
// orders, and the in-memory KV that shows them: each report's JSON under
// `__flow/state/node/{id}`, each node's cluster info (cluster_info.h) under
// `__meta_cluster_node_info-0-{role}-{id}`. The aggregate's JSON,
// `__flow/state`, is built from a snapshot of the aggregate when read (each
// chunk view caches its part). The store
// is the KV's only writer, and every change updates the KV and the index in
// the same call, so they cannot disagree.
//
// Not thread-safe: FlowStateManager owns one and does the locking. Const
// methods may run concurrently with each other. Movable: a leader change
// swaps the whole store for an empty one.
class FlowStateStore {
 public:
  // Bounded by `limits`; keeps the silence order of reports (for
  // ExpireSilent()) when it has a node_report_ttl, and the idle order of
  // records and cluster info (for ExpireIdle()) when it has a
  // node_max_idle_time.
  explicit FlowStateStore(const FlowStateLimits& limits)
      : limits_(limits),
        track_silence_(limits.node_report_ttl > absl::ZeroDuration()),
        track_idle_(limits.node_max_idle_time > absl::ZeroDuration()) {}
  FlowStateStore(FlowStateStore&&) = default;
  FlowStateStore& operator=(FlowStateStore&&) = default;

  // Records a heartbeat of `node` at `now_ms` (unix ms; `mono_ms` on the
  // monotonic clock, for the silence order). With a report, the report
  // replaces the node's previous one and the aggregate follows; its KV value
  // is the report's JSON, encoded when first read (kv::Value).
  // kResourceExhausted, naming the limit and changing nothing, for a new node
  // past FlowStateLimits::max_nodes (of flownodes, and of cluster-info keys
  // of its role) or a report that would grow the entries past
  // FlowStateLimits::max_total_flows.
  absl::Status Heartbeat(uint64_t node, NodeHeartbeat heartbeat, int64_t now_ms,
                         int64_t mono_ms);

  // Writes the cluster info of a node of another role (a frontend or a
  // datanode) heard from at `now_ms`. kResourceExhausted (nothing written)
  // for a new key past FlowStateLimits::max_nodes keys of its role.
  absl::Status RecordClusterNode(const ClusterNode& node, int64_t now_ms,
                                 int64_t mono_ms);

  // Whether a heartbeat of `node` would be refused for
  // FlowStateLimits::max_nodes: a new flownode at the bound.
  bool AtNodeBound(uint64_t node) const {
    return limits_.max_nodes != 0 && nodes_.size() >= limits_.max_nodes &&
           !nodes_.contains(node);
  }
  // The flownode to forget at max_nodes for a new one from host `origin`,
  // at `mono_ms`: one that never reported (silent longest first), else the
  // one whose last report is oldest if that is past
  // FlowStateLimits::live_report_window; the lowest id among equals. When
  // every node is live by its reports (whatever streams are open), the
  // node slots are shared by host, max-min: a newcomer whose host holds
  // fewer than its fair share (max_nodes over the hosts holding nodes,
  // its own counted) takes the place of the node whose report is oldest
  // of the host holding the most, over its share; a live node of a host
  // within its share is never taken. nullopt otherwise. O(nodes).
  std::optional<uint64_t> Evictable(int64_t mono_ms,
                                    const std::string& origin = "") const;

  // Removes the flows of `sorted_ids` (ascending, unique) from every report.
  ForgetResult ForgetFlows(const std::vector<uint32_t>& sorted_ids);

  // Removes each flownode of `node_ids` that is known: its report (its flows
  // leave the aggregate), its record and its cluster info, as if never heard
  // from. Returns how many were.
  uint64_t ForgetNodes(absl::Span<const uint64_t> node_ids);

  // Removes every node last heard from before `cutoff_mono_ms` (monotonic
  // clock) and returns their ids, oldest first. Needs a node_report_ttl.
  std::vector<uint64_t> ExpireSilent(int64_t cutoff_mono_ms);

  // Removes the cluster info of every node, and the record of every
  // flownode, last heard from before `cutoff_mono_ms`; flow state stays
  // (GreptimeDB's node_max_idle_time). Needs a node_max_idle_time.
  IdleExpiry ExpireIdle(int64_t cutoff_mono_ms);

  // Whether `__flow/state` exists: a report was merged since the store was
  // made.
  bool has_aggregate() const { return has_aggregate_; }
  const FlowAggregate& aggregate() const { return aggregate_; }

  // The node keys of the KV (everything but `__flow/state`): reports and
  // cluster info.
  const kv::KvStore& node_keys() const { return node_keys_; }
  // Keys in the KV, `__flow/state` included.
  uint64_t key_count() const {
    return node_keys_.size() + (has_aggregate_ ? 1 : 0);
  }

  // The nodes of `node_ids` that have a record (all when empty), ascending by
  // id.
  std::vector<FlownodeView> ListFlownodes(
      absl::Span<const uint64_t> node_ids) const;

  uint64_t node_count() const { return nodes_.size(); }

 private:
  // One known flownode.
  struct NodeEntry {
    // Its record; nullopt once idle past ExpireIdle()'s cutoff, while its
    // report lingers.
    std::optional<FlownodeRecord> record;
    // Its latest report (null if none), shared with its KV value, which
    // encodes it when read.
    std::shared_ptr<const FlowStateValue> report;
    int64_t heartbeat_mono = 0;    // Its last heartbeat, monotonic ms.
    int64_t report_mono = kNever;  // Its last report, monotonic ms.
    std::string origin;            // NodeHeartbeat::origin, the latest.
    // Its report key's slot in node_keys_ (KvStore::Slot); null until
    // written.
    kv::Bytes* report_slot = nullptr;
  };
  static constexpr int64_t kNever = INT64_MIN;  // No report yet.
  // One node's cluster info, by (role, key id).
  using ClusterId = std::pair<int32_t, uint64_t>;
  struct ClusterEntry {
    kv::Bytes* slot = nullptr;  // Its key's slot in node_keys_.
    int64_t seen_mono = 0;      // When it was last written, monotonic ms.
  };

  // OK if `node` (`entry`, null when new) may send a report of
  // `report_flows` flows (0: no report); else kResourceExhausted.
  absl::Status CheckCapacity(uint64_t node, const NodeEntry* entry,
                             uint64_t report_flows) const;
  // Replaces `node`'s report with `report` everywhere.
  void SetReport(uint64_t node, NodeEntry& entry, FlowStateValue report);
  // `entry`'s report; empty if it has none.
  static const FlowStateValue& ReportOf(const NodeEntry& entry);
  // Moves `node` to `mono_ms` in the silence orders.
  void Touch(uint64_t node, NodeEntry& entry, int64_t mono_ms);
  // Removes the node at `it`: its report (from the aggregate and the KV), its
  // record and its places in the silence orders. Its cluster info stays.
  void RemoveNode(absl::flat_hash_map<uint64_t, NodeEntry>::iterator it);
  // OK if `node`'s key may be written: known, or room for one more of its
  // role; else kResourceExhausted.
  absl::Status CheckClusterCapacity(const ClusterNode& node) const;
  // Writes `node`'s cluster-info key, seen at `now_ms`.
  void WriteClusterNode(const ClusterNode& node, int64_t now_ms,
                        int64_t mono_ms);

  FlowStateLimits limits_;  // Capacity and expiry.
  bool track_silence_;      // Keep by_silence_ (a node_report_ttl is set).
  bool track_idle_;         // Keep the idle orders (node_max_idle_time).
  absl::flat_hash_map<uint64_t, NodeEntry> nodes_;  // Known nodes by id.
  // (last heartbeat in monotonic ms, node) of every node, oldest first;
  // kept only with a node_report_ttl (track_silence_).
  absl::btree_set<std::pair<int64_t, uint64_t>> by_silence_;
  // The same of every node with a record; kept only with track_idle_.
  absl::btree_set<std::pair<int64_t, uint64_t>> records_by_silence_;
  // Cluster info of every node heard from, by (role, key id).
  absl::flat_hash_map<ClusterId, ClusterEntry> cluster_nodes_;
  // (last written in monotonic ms, role, id), oldest first; kept only with
  // track_idle_.
  absl::btree_set<std::pair<int64_t, ClusterId>> clusters_by_silence_;
  // Cluster-info keys per role (index: the role's number).
  std::array<uint64_t, 3> cluster_counts_{};
  FlowAggregate aggregate_;     // The aggregate of the reports.
  kv::KvStore node_keys_;       // The node keys' bytes.
  uint64_t total_flows_ = 0;    // (node, flow) entries over all reports.
  bool has_aggregate_ = false;  // Whether a report was merged.
};

}  // namespace metasrv::core

#endif  // METASRV_CORE_FLOW_STATE_STORE_H_
