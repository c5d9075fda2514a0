#include "core/flow_state_manager.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/flow_state_codec.h"
#include "core/flow_state_keys.h"
#include "core/flownode_record.h"

namespace metasrv::core {
namespace {

// The value of `__flow/state` while merges maintain it: the aggregate's JSON,
// built on read. It keeps its aggregate alive, so a reader that fetched it
// before a reset still reads the state as of its read.
class AggregateJsonValue final : public kv::Value {
 public:
  explicit AggregateJsonValue(std::shared_ptr<const FlowAggregate> aggregate)
      : aggregate_(std::move(aggregate)) {}
  std::string Read() const override { return aggregate_->EncodeJson(); }

 private:
  const std::shared_ptr<const FlowAggregate> aggregate_;  // What it encodes.
};

// A change retries this often when the KV is reset under it.
constexpr int kMaxCommitAttempts = 8;

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
    if (stat.has(kStateSize))
      builder.SetStateSize(stat.flow_id, stat.state_size);
    if (stat.has(kLastExecTime)) {
      builder.SetLastExecTime(stat.flow_id, stat.last_exec_time);
    }
    if (stat.has(kStartTime))
      builder.SetStartTime(stat.flow_id, stat.start_time);
  }
  return builder.Build();
}

}  // namespace

FlowStateManager::FlowStateManager(kv::KvBackend* kv, Options options)
    : kv_(kv), options_(options) {}

absl::Status FlowStateManager::SyncLocked() const {
  const uint64_t generation = kv_->generation();
  if (generation_ == generation) return absl::OkStatus();
  // Forget everything, then rebuild from the keys the KV holds now (none
  // right after a reset). Should the KV be reset again meanwhile, the next
  // write is refused for the stale generation and the change retries.
  nodes_.clear();
  by_silence_.clear();
  aggregate_ = std::make_shared<FlowAggregate>();
  aggregate_value_ = std::make_shared<AggregateJsonValue>(aggregate_);
  global_is_aggregate_ = false;
  generation_.reset();
  absl::flat_hash_map<uint64_t, NodeEntry> rebuilt;
  for (absl::string_view prefix : {kFlownodePrefix, kFlowStateNodePrefix}) {
    kv::RangeRequest range;
    range.key = std::string(prefix);
    range.range_end = kv::PrefixEnd(range.key);
    absl::StatusOr<kv::RangeResponse> stored = kv_->Range(range);
    if (!stored.ok()) return stored.status();
    const bool records = prefix == kFlownodePrefix;
    for (kv::KeyValue& kv : stored->kvs) {
      std::optional<uint64_t> node =
          records ? ParseFlownodeKey(kv.key) : ParseFlowStateNodeKey(kv.key);
      if (!node.has_value()) continue;  // Not a node key (a longer name).
      absl::Status decoded;
      if (records) {
        absl::StatusOr<FlownodeRecord> record = DecodeFlownodeRecord(kv.value);
        decoded = record.status();
        if (record.ok()) {
          NodeEntry& entry = rebuilt[*node];
          entry.record = std::make_shared<LiveRecord>(*std::move(record));
        }
      } else {
        absl::StatusOr<FlowStateValue> report = DecodeFlowState(kv.value);
        decoded = report.status();
        if (report.ok()) {
          rebuilt[*node].report = *std::move(report);
        }
      }
      if (!decoded.ok()) {
        return absl::DataLossError(
            absl::StrCat("key ", kv.key, ": ", decoded.message()));
      }
    }
  }
  for (auto& [node, entry] : rebuilt) {
    if (entry.record == nullptr) {
      // A report without a record counts as heard from now.
      FlownodeRecord record;
      record.last_heartbeat_ms = NowMs();
      entry.record = std::make_shared<LiveRecord>(std::move(record));
    }
    // The KV holds the record's bytes, not this live value: the node's next
    // heartbeat writes it. Its TTL starts now.
    entry.record_in_kv = false;
    entry.heartbeat_mono_ms = MonoMs();
    aggregate_->Replace(node, FlowStateValue(), entry.report);
    if (options_.node_report_ttl > absl::ZeroDuration()) {
      by_silence_.insert({entry.heartbeat_mono_ms, node});
    }
  }
  total_flows_ = 0;
  for (const auto& [node, entry] : rebuilt)
    total_flows_ += entry.report.flows().size();
  nodes_ = std::move(rebuilt);
  generation_ = generation;
  return absl::OkStatus();
}

absl::Status FlowStateManager::Sync() {
  {
    MutexLock lock(&mu_);
    absl::Status synced = SyncLocked();
    if (!synced.ok()) return synced;
  }
  Notify();
  return absl::OkStatus();
}

void FlowStateManager::Notify() const {
  FlowStateListener* listener = listener_.load();
  if (listener != nullptr) listener->OnFlowStateChanged();
}

absl::StatusOr<std::optional<FlowStateValue>> FlowStateManager::Get() const {
  absl::StatusOr<std::string> json = kv_->Get(std::string(kFlowStateKey));
  if (absl::IsNotFound(json.status())) return std::nullopt;
  if (!json.ok()) return json.status();
  absl::StatusOr<FlowStateValue> value = DecodeFlowState(*json);
  if (!value.ok()) return value.status();
  return std::optional<FlowStateValue>(*std::move(value));
}

absl::Status FlowStateManager::Put(const FlowStateValue& value) {
  std::string json = EncodeFlowState(value);
  MutexLock lock(&mu_);
  absl::Status synced = SyncLocked();
  if (!synced.ok()) return synced;
  absl::Status written =
      kv_->Write({{std::string(kFlowStateKey), kv::MakeBytes(std::move(json))}},
                 generation_);
  if (written.ok()) global_is_aggregate_ = false;
  return written;
}

absl::Status FlowStateManager::CommitLocked(
    std::optional<uint64_t> kv_generation,
    absl::FunctionRef<std::string()> what, absl::FunctionRef<Change()> plan,
    absl::FunctionRef<void()> apply) {
  for (int attempt = 0; attempt < kMaxCommitAttempts; ++attempt) {
    absl::Status synced = SyncLocked();
    if (!synced.ok()) return synced;
    if (kv_generation.has_value() && *kv_generation != generation_) {
      return absl::AbortedError(
          absl::StrCat("the KV was reset since generation ", *kv_generation,
                       " (leadership changed); ", what(), " not recorded"));
    }
    Change change = plan();
    if (!change.refused.ok()) return change.refused;
    if (change.touches_aggregate && !global_is_aggregate_) {
      change.batch.push_back({std::string(kFlowStateKey), aggregate_value_});
    }
    if (!change.batch.empty()) {
      // Written only if the KV was not reset since SyncLocked() looked.
      absl::Status written = kv_->Write(change.batch, generation_);
      if (absl::IsAborted(written)) continue;
      if (!written.ok()) return written;
      if (change.touches_aggregate) global_is_aggregate_ = true;
    }
    apply();
    return absl::OkStatus();
  }
  return absl::UnavailableError(
      absl::StrCat(what(), " gave up: the KV was reset on every attempt"));
}

absl::Status FlowStateManager::CheckCapacityLocked(
    uint64_t node, const NodeEntry* entry, uint64_t report_flows) const {
  if (entry == nullptr && options_.max_nodes != 0 &&
      nodes_.size() >= options_.max_nodes) {
    return absl::ResourceExhaustedError(
        absl::StrCat("flownode ", node, " refused: ", nodes_.size(),
                     " flownodes are known, the limit (--max_nodes) is ",
                     options_.max_nodes));
  }
  const uint64_t old_flows =
      entry == nullptr ? 0 : entry->report.flows().size();
  if (options_.max_total_flows != 0 && report_flows > old_flows &&
      total_flows_ - old_flows + report_flows > options_.max_total_flows) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "report of node ", node, " refused: ", report_flows,
        " flows would bring ", "the total to ",
        total_flows_ - old_flows + report_flows,
        ", past the limit (--max_total_flows) of ", options_.max_total_flows));
  }
  return absl::OkStatus();
}

FlowStateManager::NodeEntry& FlowStateManager::EntryLocked(uint64_t node,
                                                           int64_t mono_ms) {
  auto [it, inserted] = nodes_.try_emplace(node);
  NodeEntry& entry = it->second;
  if (options_.node_report_ttl > absl::ZeroDuration()) {
    if (!inserted) by_silence_.erase({entry.heartbeat_mono_ms, node});
    by_silence_.insert({mono_ms, node});
  }
  entry.heartbeat_mono_ms = mono_ms;
  return entry;
}

absl::Status FlowStateManager::Heartbeat(
    uint64_t node_id, NodeHeartbeat heartbeat,
    std::optional<uint64_t> kv_generation) {
  // Encoding the report is O(report) and needs no lock.
  kv::ValuePtr report_value;
  if (heartbeat.report.has_value()) {
    report_value = kv::MakeBytes(EncodeFlowState(*heartbeat.report));
  }
  const int64_t now = NowMs();
  const int64_t mono = MonoMs();
  const bool has_report = report_value != nullptr;
  // What this heartbeat changes in the node's record.
  auto update = [&](FlownodeRecord& record) {
    record.last_heartbeat_ms = now;
    if (has_report) record.last_report_ms = now;
    if (!heartbeat.peer_addr.empty()) record.peer_addr = heartbeat.peer_addr;
    if (heartbeat.info.has_value()) record.info = heartbeat.info;
  };
  std::shared_ptr<LiveRecord> fresh;  // The record of a node new to the index.
  absl::Status committed;
  {
    MutexLock lock(&mu_);
    committed = CommitLocked(
        kv_generation,
        [&] { return absl::StrCat("heartbeat of node ", node_id); },
        [&] {
          Change change;
          auto it = nodes_.find(node_id);
          fresh.reset();
          change.refused = CheckCapacityLocked(
              node_id, it == nodes_.end() ? nullptr : &it->second,
              has_report ? heartbeat.report->flows().size() : 0);
          if (!change.refused.ok()) return change;
          if (it == nodes_.end()) {
            // Complete before the KV shows it.
            FlownodeRecord record;
            update(record);
            fresh = std::make_shared<LiveRecord>(std::move(record));
            change.batch.push_back({FlownodeKey(node_id), fresh});
          } else if (!it->second.record_in_kv) {
            change.batch.push_back({FlownodeKey(node_id), it->second.record});
          }
          if (has_report) {
            change.batch.push_back({FlowStateNodeKey(node_id), report_value});
            change.touches_aggregate = true;
          }
          return change;
        },
        [&] {
          NodeEntry& entry = EntryLocked(node_id, mono);
          if (fresh != nullptr) {
            entry.record = std::move(fresh);
          } else {
            entry.record->Update(update);
          }
          entry.record_in_kv = true;
          if (has_report) {
            total_flows_ += heartbeat.report->flows().size();
            total_flows_ -= entry.report.flows().size();
            aggregate_->Replace(node_id, entry.report, *heartbeat.report);
            entry.report = *std::move(heartbeat.report);
          }
        });
  }
  if (committed.ok() && has_report) Notify();
  return committed;
}

absl::Status FlowStateManager::Merge(uint64_t node_id, FlowStateValue report,
                                     std::optional<uint64_t> kv_generation) {
  NodeHeartbeat heartbeat;
  heartbeat.report = std::move(report);
  return Heartbeat(node_id, std::move(heartbeat), kv_generation);
}

absl::StatusOr<ForgetResult> FlowStateManager::ForgetFlows(
    absl::Span<const uint32_t> flow_ids) {
  if (flow_ids.empty()) {
    return absl::InvalidArgumentError("ForgetFlows needs at least one flow id");
  }
  std::vector<uint32_t> ids(flow_ids.begin(), flow_ids.end());
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  ForgetResult result;
  std::vector<std::pair<uint64_t, FlowStateValue>> rewrites;
  absl::Status committed;
  {
    MutexLock lock(&mu_);
    committed = CommitLocked(
        std::nullopt, [] { return std::string("forgetting flows"); },
        [&] {
          rewrites.clear();
          Change change;
          for (const auto& [node, entry] : nodes_) {
            std::optional<FlowStateValue> kept = Without(entry.report, ids);
            if (!kept.has_value()) continue;
            change.batch.push_back({FlowStateNodeKey(node),
                                    kv::MakeBytes(EncodeFlowState(*kept))});
            rewrites.emplace_back(node, *std::move(kept));
          }
          change.touches_aggregate = !rewrites.empty();
          result.forgotten_flows = aggregate_->Read(ids).size();
          result.updated_nodes = rewrites.size();
          return change;
        },
        [&] {
          for (auto& [node, kept] : rewrites) {
            NodeEntry& entry = nodes_[node];
            total_flows_ -= entry.report.flows().size() - kept.flows().size();
            aggregate_->Replace(node, entry.report, kept);
            entry.report = std::move(kept);
          }
        });
  }
  if (!committed.ok()) return committed;
  if (result.updated_nodes > 0) Notify();
  return result;
}

absl::StatusOr<uint64_t> FlowStateManager::ExpireSilentNodes() {
  if (options_.node_report_ttl <= absl::ZeroDuration()) return 0;
  const int64_t cutoff =
      MonoMs() - absl::ToInt64Milliseconds(options_.node_report_ttl);
  std::vector<uint64_t> expired;
  absl::Status committed;
  {
    MutexLock lock(&mu_);
    committed = CommitLocked(
        std::nullopt, [] { return std::string("node expiry"); },
        [&] {
          expired.clear();
          Change change;
          for (auto it = by_silence_.begin();
               it != by_silence_.end() && it->first < cutoff; ++it) {
            const uint64_t node = it->second;
            expired.push_back(node);
            change.batch.push_back({FlowStateNodeKey(node), nullptr});
            change.batch.push_back({FlownodeKey(node), nullptr});
            if (!nodes_[node].report.empty()) change.touches_aggregate = true;
          }
          return change;
        },
        [&] {
          for (uint64_t node : expired) {
            auto it = nodes_.find(node);
            by_silence_.erase({it->second.heartbeat_mono_ms, node});
            total_flows_ -= it->second.report.flows().size();
            aggregate_->Replace(node, it->second.report, FlowStateValue());
            nodes_.erase(it);
          }
        });
  }
  if (!committed.ok()) return committed;
  if (!expired.empty()) Notify();
  return expired.size();
}

absl::StatusOr<bool> FlowStateManager::Visit(
    absl::Span<const uint32_t> flow_ids,
    const FlowAggregate::Visitor& visit) const {
  std::shared_ptr<const FlowAggregate> aggregate;
  {
    MutexLock lock(&mu_);
    absl::Status synced = SyncLocked();
    if (!synced.ok()) return synced;
    if (global_is_aggregate_) aggregate = aggregate_;
  }
  if (aggregate != nullptr) {
    aggregate->Visit(flow_ids, visit);
    return true;
  }
  // No merge since the reset, or a Put() value: read what the key holds.
  absl::StatusOr<std::optional<FlowStateValue>> value = Get();
  if (!value.ok()) return value.status();
  if (!value->has_value()) return false;
  std::vector<uint32_t> ids(flow_ids.begin(), flow_ids.end());
  std::sort(ids.begin(), ids.end());
  std::vector<AggregateFlow> flows;
  for (const FlowStat& stat : (*value)->flows()) {
    if (ids.empty() ||
        std::binary_search(ids.begin(), ids.end(), stat.flow_id)) {
      flows.push_back(AggregateFlow{stat});
    }
  }
  if (!flows.empty()) visit(flows);
  return true;
}

absl::StatusOr<std::optional<std::vector<AggregateFlow>>>
FlowStateManager::Read(absl::Span<const uint32_t> flow_ids) const {
  std::vector<AggregateFlow> out;
  absl::StatusOr<bool> found =
      Visit(flow_ids, [&](absl::Span<const AggregateFlow> flows) {
        out.insert(out.end(), flows.begin(), flows.end());
      });
  if (!found.ok()) return found.status();
  if (!*found) return std::nullopt;
  return std::optional<std::vector<AggregateFlow>>(std::move(out));
}

absl::StatusOr<std::vector<FlownodeView>> FlowStateManager::ListFlownodes(
    absl::Span<const uint64_t> node_ids) const {
  std::vector<FlownodeView> out;
  {
    MutexLock lock(&mu_);
    absl::Status synced = SyncLocked();
    if (!synced.ok()) return synced;
    auto add = [&out](uint64_t node, const NodeEntry& entry) {
      out.push_back(
          {node, entry.record->Snapshot(), entry.report.flows().size()});
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
  }
  std::sort(out.begin(), out.end(),
            [](const FlownodeView& a, const FlownodeView& b) {
              return a.node_id < b.node_id;
            });
  out.erase(std::unique(out.begin(), out.end(),
                        [](const FlownodeView& a, const FlownodeView& b) {
                          return a.node_id == b.node_id;
                        }),
            out.end());
  return out;
}

uint64_t FlowStateManager::node_count() const {
  MutexLock lock(&mu_);
  return generation_ == kv_->generation() ? nodes_.size() : 0;
}

uint64_t FlowStateManager::flow_count() const {
  MutexLock lock(&mu_);
  return generation_ == kv_->generation() && aggregate_
             ? aggregate_->flow_count()
             : 0;
}

}  // namespace metasrv::core
