#include "core/flow_state_store.h"

#include <algorithm>
#include <string_view>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/fair_share.h"
#include "core/flow_state_codec.h"
#include "core/flow_state_keys.h"

namespace metasrv::core {
namespace {

// `report` without the flows of `sorted_ids`; nullopt if it had none of them.
std::optional<FlowStateValue> Without(const FlowStateValue& report,
                                      const std::vector<uint32_t>& sorted_ids) {
  bool found = false;
  for (uint32_t id : sorted_ids) found = found || report.Find(id) != nullptr;
  if (!found) return std::nullopt;
  FlowStateValue::Builder builder;
  builder.Reserve(report.flows().size() * 3);
  for (const FlowStat& stat : report.flows()) {
    if (std::binary_search(sorted_ids.begin(), sorted_ids.end(),
                           stat.flow_id)) {
      continue;
    }
    builder.Set(stat);
  }
  return builder.Build();
}

}  // namespace

absl::Status FlowStateStore::CheckCapacity(uint64_t node,
                                           const NodeEntry* entry,
                                           uint64_t report_flows) const {
  if (entry == nullptr && limits_.max_nodes != 0 &&
      nodes_.size() >= limits_.max_nodes) {
    return absl::ResourceExhaustedError(
        absl::StrCat("flownode ", node, " refused: ", nodes_.size(),
                     " flownodes are known, the limit (--max_nodes) is ",
                     limits_.max_nodes));
  }
  const uint64_t old_flows =
      entry == nullptr ? 0 : ReportOf(*entry).flows().size();
  if (limits_.max_total_flows != 0 && report_flows > old_flows &&
      total_flows_ - old_flows + report_flows > limits_.max_total_flows) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "report of node ", node, " refused: ", report_flows,
        " flows would bring the total to ",
        total_flows_ - old_flows + report_flows,
        ", past the limit (--max_total_flows) of ", limits_.max_total_flows));
  }
  return absl::OkStatus();
}

const FlowStateValue& FlowStateStore::ReportOf(const NodeEntry& entry) {
  static const FlowStateValue* const kNone = new FlowStateValue();
  return entry.report == nullptr ? *kNone : *entry.report;
}

void FlowStateStore::SetReport(uint64_t node, NodeEntry& entry,
                               FlowStateValue report) {
  auto shared = std::make_shared<const FlowStateValue>(std::move(report));
  total_flows_ += shared->flows().size();
  total_flows_ -= ReportOf(entry).flows().size();
  aggregate_.Replace(node, ReportOf(entry), *shared);
  if (entry.report_slot == nullptr) {
    entry.report_slot = &node_keys_.Slot(FlowStateNodeKey(node));
  }
  // Encoded when somebody reads the key, from this report, which no one
  // changes: every reader of this value sees the same bytes.
  *entry.report_slot = kv::MakeLazyBytes(
      [report = shared]() { return EncodeFlowState(*report); });
  entry.report = std::move(shared);
  has_aggregate_ = true;
}

void FlowStateStore::Touch(uint64_t node, NodeEntry& entry, int64_t mono_ms) {
  if (track_silence_) {
    by_silence_.erase({entry.heartbeat_mono, node});
    by_silence_.insert({mono_ms, node});
  }
  if (track_idle_) {
    // A node whose record expired has none here; it gets one back now.
    records_by_silence_.erase({entry.heartbeat_mono, node});
    records_by_silence_.insert({mono_ms, node});
  }
  entry.heartbeat_mono = mono_ms;
}

absl::Status FlowStateStore::CheckClusterCapacity(
    const ClusterNode& node) const {
  const int32_t role = static_cast<int32_t>(node.role);
  if (limits_.max_nodes == 0 ||
      cluster_nodes_.contains(ClusterId{role, node.node_id}) ||
      cluster_counts_[role] < limits_.max_nodes) {
    return absl::OkStatus();
  }
  return absl::ResourceExhaustedError(
      absl::StrCat("cluster info of node ", node.node_id, " (role ", role,
                   ") refused: ", cluster_counts_[role],
                   " nodes of its role are known, the limit (--max_nodes) is ",
                   limits_.max_nodes));
}

void FlowStateStore::WriteClusterNode(const ClusterNode& node, int64_t now_ms,
                                      int64_t mono_ms) {
  const ClusterId id{static_cast<int32_t>(node.role), node.node_id};
  auto [it, fresh] = cluster_nodes_.try_emplace(id);
  ClusterEntry& entry = it->second;
  if (fresh) {
    entry.slot = &node_keys_.Slot(ClusterInfoKey(node.role, node.node_id));
    ++cluster_counts_[id.first];
  } else if (track_idle_) {
    clusters_by_silence_.erase({entry.seen_mono, id});
  }
  if (track_idle_) clusters_by_silence_.insert({mono_ms, id});
  entry.seen_mono = mono_ms;
  // Encoded when read (a node says the same each heartbeat; its time moves).
  *entry.slot = kv::MakeLazyBytes(
      [node, now_ms]() { return EncodeClusterNodeInfo(node, now_ms); });
}

absl::Status FlowStateStore::RecordClusterNode(const ClusterNode& node,
                                               int64_t now_ms,
                                               int64_t mono_ms) {
  absl::Status capacity = CheckClusterCapacity(node);
  if (!capacity.ok()) return capacity;
  WriteClusterNode(node, now_ms, mono_ms);
  return absl::OkStatus();
}

absl::Status FlowStateStore::Heartbeat(uint64_t node, NodeHeartbeat heartbeat,
                                       int64_t now_ms, int64_t mono_ms) {
  auto it = nodes_.find(node);
  const bool has_report = heartbeat.report.has_value();
  absl::Status capacity =
      CheckCapacity(node, it == nodes_.end() ? nullptr : &it->second,
                    has_report ? heartbeat.report->flows().size() : 0);
  if (!capacity.ok()) return capacity;
  if (heartbeat.cluster_node.has_value()) {
    capacity = CheckClusterCapacity(*heartbeat.cluster_node);
    if (!capacity.ok()) return capacity;
    WriteClusterNode(*heartbeat.cluster_node, now_ms, mono_ms);
  }
  if (it == nodes_.end()) it = nodes_.try_emplace(node).first;
  NodeEntry& entry = it->second;
  Touch(node, entry, mono_ms);
  if (!entry.record.has_value()) entry.record.emplace();
  FlownodeRecord& record = *entry.record;
  record.last_heartbeat_ms = now_ms;
  if (has_report) {
    record.last_report_ms = now_ms;
    entry.report_mono = mono_ms;
  }
  if (!heartbeat.peer_addr.empty()) {
    record.peer_addr = std::move(heartbeat.peer_addr);
  }
  if (heartbeat.info.has_value()) record.info = std::move(heartbeat.info);
  if (!heartbeat.origin.empty()) entry.origin = std::move(heartbeat.origin);
  if (has_report) {
    SetReport(node, entry, *std::move(heartbeat.report));
  }
  return absl::OkStatus();
}

std::optional<uint64_t> FlowStateStore::Evictable(
    int64_t mono_ms, const std::string& origin) const {
  // Ordered by (reported at all, when: its last report, or, never having
  // reported, its last heartbeat, id): the least is the victim.
  std::optional<std::tuple<bool, int64_t, uint64_t>> best;
  for (const auto& [node, entry] : nodes_) {
    const bool reported = entry.report_mono != kNever;
    const auto key = std::make_tuple(
        reported, reported ? entry.report_mono : entry.heartbeat_mono, node);
    if (!best.has_value() || key < *best) best = key;
  }
  if (!best.has_value()) return std::nullopt;
  const auto [reported, when, node] = *best;
  if (!reported ||
      when <= mono_ms - absl::ToInt64Milliseconds(limits_.live_report_window)) {
    return node;
  }
  // Every node is live: shared by host. A node of no known host is not
  // counted to any.
  if (origin.empty()) return std::nullopt;
  FairShare<std::string_view> fair(static_cast<int64_t>(limits_.max_nodes),
                                   origin);
  for (const auto& [id, entry] : nodes_) {
    if (!entry.origin.empty()) fair.Count(entry.origin);
  }
  const auto over = fair.Over();
  if (!fair.AskerMayTake() || over.empty()) return std::nullopt;
  const std::string_view most = over.front().second;
  std::optional<std::pair<int64_t, uint64_t>> oldest;
  for (const auto& [id, entry] : nodes_) {
    if (entry.origin != most) continue;
    const auto key = std::make_pair(entry.report_mono, id);
    if (!oldest.has_value() || key < *oldest) oldest = key;
  }
  return oldest->second;
}

ForgetResult FlowStateStore::ForgetFlows(
    const std::vector<uint32_t>& sorted_ids) {
  ForgetResult result;
  result.forgotten_flows = aggregate_.CountPresent(sorted_ids);
  for (auto& [node, entry] : nodes_) {
    std::optional<FlowStateValue> kept = Without(ReportOf(entry), sorted_ids);
    if (!kept.has_value()) continue;
    SetReport(node, entry, *std::move(kept));
    ++result.updated_nodes;
  }
  return result;
}

void FlowStateStore::RemoveNode(
    absl::flat_hash_map<uint64_t, NodeEntry>::iterator it) {
  const uint64_t node = it->first;
  NodeEntry& entry = it->second;
  if (track_silence_) by_silence_.erase({entry.heartbeat_mono, node});
  if (track_idle_) records_by_silence_.erase({entry.heartbeat_mono, node});
  total_flows_ -= ReportOf(entry).flows().size();
  aggregate_.Replace(node, ReportOf(entry), FlowStateValue());
  node_keys_.Apply(FlowStateNodeKey(node), nullptr);
  nodes_.erase(it);
}

uint64_t FlowStateStore::ForgetNodes(absl::Span<const uint64_t> node_ids) {
  uint64_t forgotten = 0;
  for (const uint64_t node : node_ids) {
    auto it = nodes_.find(node);
    if (it == nodes_.end()) continue;
    RemoveNode(it);
    ++forgotten;
    const ClusterId id{static_cast<int32_t>(NodeRole::kFlownode), node};
    auto info = cluster_nodes_.find(id);
    if (info == cluster_nodes_.end()) continue;
    if (track_idle_) {
      clusters_by_silence_.erase({info->second.seen_mono, id});
    }
    cluster_nodes_.erase(info);
    --cluster_counts_[id.first];
    node_keys_.Apply(ClusterInfoKey(NodeRole::kFlownode, node), nullptr);
  }
  return forgotten;
}

std::vector<uint64_t> FlowStateStore::ExpireSilent(int64_t cutoff_mono_ms) {
  std::vector<uint64_t> expired;
  while (!by_silence_.empty() && by_silence_.begin()->first < cutoff_mono_ms) {
    const uint64_t node = by_silence_.begin()->second;
    RemoveNode(nodes_.find(node));
    expired.push_back(node);
  }
  return expired;
}

IdleExpiry FlowStateStore::ExpireIdle(int64_t cutoff_mono_ms) {
  IdleExpiry expired;
  while (!records_by_silence_.empty() &&
         records_by_silence_.begin()->first < cutoff_mono_ms) {
    const uint64_t node = records_by_silence_.begin()->second;
    records_by_silence_.erase(records_by_silence_.begin());
    nodes_.find(node)->second.record.reset();
    ++expired.records;
  }
  while (!clusters_by_silence_.empty() &&
         clusters_by_silence_.begin()->first < cutoff_mono_ms) {
    const ClusterId id = clusters_by_silence_.begin()->second;
    clusters_by_silence_.erase(clusters_by_silence_.begin());
    cluster_nodes_.erase(id);
    --cluster_counts_[id.first];
    node_keys_.Apply(ClusterInfoKey(static_cast<NodeRole>(id.first), id.second),
                     nullptr);
    ++expired.cluster_nodes;
  }
  return expired;
}

std::vector<FlownodeView> FlowStateStore::ListFlownodes(
    absl::Span<const uint64_t> node_ids) const {
  std::vector<FlownodeView> out;
  auto add = [&out](uint64_t node, const NodeEntry& entry) {
    if (!entry.record.has_value()) return;
    out.push_back({node, *entry.record, ReportOf(entry).flows().size()});
  };
  if (node_ids.empty()) {
    out.reserve(nodes_.size());
    for (const auto& [node, entry] : nodes_) add(node, entry);
  } else {
    for (uint64_t node : node_ids) {
      auto it = nodes_.find(node);
      if (it != nodes_.end()) add(node, it->second);
    }
  }
  auto by_id = [](const FlownodeView& a, const FlownodeView& b) {
    return a.node_id < b.node_id;
  };
  std::sort(out.begin(), out.end(), by_id);
  out.erase(std::unique(out.begin(), out.end(),
                        [](const FlownodeView& a, const FlownodeView& b) {
                          return a.node_id == b.node_id;
                        }),
            out.end());
  return out;
}

}  // namespace metasrv::core
