#include "core/flow_state_manager.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/flow_state_codec.h"
#include "core/flow_state_keys.h"

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

// A merge retries this often when the KV is reset under it.
constexpr int kMaxMergeAttempts = 8;

}  // namespace

FlowStateManager::FlowStateManager(kv::KvBackend* kv) : kv_(kv) {}

absl::Status FlowStateManager::SyncLocked() const {
  const uint64_t generation = kv_->generation();
  if (generation_ == generation) return absl::OkStatus();
  // Forget everything, then rebuild from the per-node keys the KV holds now
  // (none right after a reset). Should the KV be reset again meanwhile, the
  // next write is refused for the stale generation and the merge retries.
  nodes_.clear();
  aggregate_ = std::make_shared<FlowAggregate>();
  aggregate_value_ = std::make_shared<AggregateJsonValue>(aggregate_);
  global_is_aggregate_ = false;
  generation_.reset();
  kv::RangeRequest range;
  range.key = std::string(kFlowStateNodePrefix);
  range.range_end = kv::PrefixEnd(range.key);
  absl::StatusOr<kv::RangeResponse> stored = kv_->Range(range);
  if (!stored.ok()) return stored.status();
  for (kv::KeyValue& kv : stored->kvs) {
    std::optional<uint64_t> node = ParseFlowStateNodeKey(kv.key);
    if (!node.has_value()) continue;  // Not a node key (a longer name).
    absl::StatusOr<FlowStateValue> report = DecodeFlowState(kv.value);
    if (!report.ok()) {
      return absl::DataLossError(absl::StrCat("key ", kv.key, ": ",
                                              report.status().message()));
    }
    aggregate_->Replace(*node, FlowStateValue(), *report);
    nodes_[*node] = *std::move(report);
  }
  generation_ = generation;
  return absl::OkStatus();
}

absl::Status FlowStateManager::Sync() {
  MutexLock lock(&mu_);
  return SyncLocked();
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
  absl::Status written = kv_->Write(
      {{std::string(kFlowStateKey), kv::MakeBytes(std::move(json))}},
      generation_);
  if (written.ok()) global_is_aggregate_ = false;
  return written;
}

absl::Status FlowStateManager::Merge(uint64_t node_id, FlowStateValue report,
                                     std::optional<uint64_t> kv_generation) {
  // Encoding the node's value is O(report) and needs no lock.
  kv::ValuePtr node_value = kv::MakeBytes(EncodeFlowState(report));
  std::string node_key = FlowStateNodeKey(node_id);
  MutexLock lock(&mu_);
  absl::Status written;
  for (int attempt = 0; attempt < kMaxMergeAttempts; ++attempt) {
    absl::Status synced = SyncLocked();
    if (!synced.ok()) return synced;
    if (kv_generation.has_value() && *kv_generation != generation_) {
      return absl::AbortedError(absl::StrCat(
          "the KV was reset since generation ", *kv_generation,
          " (leadership changed); report of node ", node_id, " not merged"));
    }
    std::vector<kv::Mutation> batch = {{node_key, node_value}};
    if (!global_is_aggregate_) {
      batch.push_back({std::string(kFlowStateKey), aggregate_value_});
    }
    // Written only if the KV was not reset since SyncLocked() looked.
    written = kv_->Write(batch, generation_);
    if (absl::IsAborted(written)) continue;
    if (!written.ok()) return written;
    global_is_aggregate_ = true;
    FlowStateValue& slot = nodes_[node_id];
    aggregate_->Replace(node_id, slot, report);
    slot = std::move(report);
    return absl::OkStatus();
  }
  return absl::UnavailableError(
      absl::StrCat("merge of node ", node_id,
                   " gave up: the KV was reset on every attempt"));
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
    if (ids.empty() || std::binary_search(ids.begin(), ids.end(), stat.flow_id)) {
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

uint64_t FlowStateManager::node_count() const {
  MutexLock lock(&mu_);
  return generation_ == kv_->generation() ? nodes_.size() : 0;
}

uint64_t FlowStateManager::flow_count() const {
  MutexLock lock(&mu_);
  return generation_ == kv_->generation() && aggregate_ ? aggregate_->flow_count()
                                                        : 0;
}

}  // namespace metasrv::core
