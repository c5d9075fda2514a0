#include "core/flow_state_manager.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/flow_state_codec.h"
#include "core/flow_state_keys.h"

namespace metasrv::core {

struct FlowStateManager::Found {
  std::vector<kv::StoredEntry> entries;  // Keys in order, with their bytes.
  bool more = false;                     // The limit cut the range.
  // Whether `__flow/state`, whose entries have null bytes, is to be encoded
  // (asked for, and not keys only).
  bool encode_aggregate = false;
};

FlowStateManager::FlowStateManager(Options options)
    : options_(options), store_(StoreLimits()) {}

FlowStateStore::Limits FlowStateManager::StoreLimits() const {
  return {options_.max_nodes, options_.max_total_flows,
          options_.node_report_ttl > absl::ZeroDuration()};
}

void FlowStateManager::Notify() const {
  FlowStateListener* listener = listener_.load();
  if (listener != nullptr) listener->OnFlowStateChanged();
}

absl::Status FlowStateManager::Heartbeat(uint64_t node_id,
                                         NodeHeartbeat heartbeat,
                                         std::optional<uint64_t> term) {
  // Encoding the report is O(report) and needs no lock.
  kv::Bytes report_json;
  const bool has_report = heartbeat.report.has_value();
  if (has_report)
    report_json = kv::MakeBytes(EncodeFlowState(*heartbeat.report));
  const int64_t now = absl::ToUnixMillis(options_.clock->Now());
  const int64_t mono = absl::ToUnixMillis(options_.clock->Monotonic());
  {
    MutexLock lock(&mu_);
    if (term.has_value() && *term != term_) {
      return absl::AbortedError(
          absl::StrCat("heartbeat of node ", node_id,
                       " not recorded: the state was reset "
                       "since term ",
                       *term, " (leadership changed)"));
    }
    absl::Status stored = store_.Heartbeat(node_id, std::move(heartbeat),
                                           std::move(report_json), now, mono);
    if (!stored.ok()) return stored;
  }
  if (has_report) Notify();
  return absl::OkStatus();
}

absl::Status FlowStateManager::Merge(uint64_t node_id, FlowStateValue report,
                                     std::optional<uint64_t> term) {
  NodeHeartbeat heartbeat;
  heartbeat.report = std::move(report);
  return Heartbeat(node_id, std::move(heartbeat), term);
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
  {
    MutexLock lock(&mu_);
    result = store_.ForgetFlows(ids);
  }
  if (result.updated_nodes > 0) Notify();
  return result;
}

std::vector<uint64_t> FlowStateManager::ExpireSilentNodes() {
  if (options_.node_report_ttl <= absl::ZeroDuration()) return {};
  const int64_t cutoff = absl::ToUnixMillis(options_.clock->Monotonic()) -
                         absl::ToInt64Milliseconds(options_.node_report_ttl);
  std::vector<uint64_t> expired;
  {
    MutexLock lock(&mu_);
    expired = store_.ExpireSilent(cutoff);
  }
  if (!expired.empty()) Notify();
  return expired;
}

ResetResult FlowStateManager::Reset() {
  FlowStateStore old(StoreLimits());
  ResetResult result;
  {
    MutexLock lock(&mu_);
    std::swap(old, store_);
    result = {old.key_count(), ++term_};
  }
  Notify();
  return result;  // `old` is freed here, without the lock.
}

uint64_t FlowStateManager::term() const {
  ReaderMutexLock lock(&mu_);
  return term_;
}

std::optional<FlowStateValue> FlowStateManager::Get() const {
  std::optional<std::vector<AggregateFlow>> flows = Read({});
  if (!flows.has_value()) return std::nullopt;
  FlowStateValue::Builder builder;
  builder.Reserve(flows->size() * 3);
  for (const AggregateFlow& flow : *flows) builder.Set(flow.stat);
  return builder.Build();
}

std::optional<std::vector<AggregateFlow>> FlowStateManager::Read(
    absl::Span<const uint32_t> flow_ids) const {
  std::vector<AggregateFlow> out;
  const bool found =
      Visit(flow_ids, [&](absl::Span<const AggregateFlow> flows) {
        out.insert(out.end(), flows.begin(), flows.end());
      });
  if (!found) return std::nullopt;
  return out;
}

bool FlowStateManager::Visit(absl::Span<const uint32_t> flow_ids,
                             const Visitor& visit) const {
  std::vector<AggregateFlow> batch;
  if (!flow_ids.empty()) {
    {
      ReaderMutexLock lock(&mu_);
      if (!store_.has_aggregate()) return false;
      batch = store_.aggregate().Read(flow_ids);
    }
    if (!batch.empty()) visit(batch);
    return true;
  }
  // One chunk at a time, so that a large read never holds the lock long.
  std::optional<uint32_t> next = 0;
  std::optional<uint64_t> term;
  while (next.has_value()) {
    {
      ReaderMutexLock lock(&mu_);
      if (!term.has_value()) {
        if (!store_.has_aggregate()) return false;
        term = term_;
      }
      if (*term != term_) break;
      next = store_.aggregate().CopyChunk(*next, &batch);
    }
    if (!batch.empty()) visit(batch);
  }
  return true;
}

std::vector<FlownodeView> FlowStateManager::ListFlownodes(
    absl::Span<const uint64_t> node_ids) const {
  ReaderMutexLock lock(&mu_);
  return store_.ListFlownodes(node_ids);
}

uint64_t FlowStateManager::node_count() const {
  ReaderMutexLock lock(&mu_);
  return store_.node_count();
}

uint64_t FlowStateManager::flow_count() const {
  ReaderMutexLock lock(&mu_);
  return store_.aggregate().flow_count();
}

void FlowStateManager::EncodeAndCache(FlowAggregate::EncodingPlan* plan,
                                      uint64_t term,
                                      ChunkEncoder encoder) const {
  FlowAggregate::Encode(plan, encoder);
  if (!plan->encoded_any) return;
  MutexLock lock(&mu_);
  if (term_ == term) store_.mutable_aggregate().CacheEncoding(*plan);
}

std::optional<std::vector<std::shared_ptr<const std::string>>>
FlowStateManager::EncodeChunks(int slot, ChunkEncoder encoder) const {
  // A chunk at a time, so that a read of a state that changed everywhere
  // never holds the lock for more than one chunk's copy. A reset meanwhile
  // starts the plan over in the new term.
  while (true) {
    FlowAggregate::EncodingPlan plan;
    plan.slot = slot;
    uint64_t term = 0;
    {
      ReaderMutexLock lock(&mu_);
      if (!store_.has_aggregate()) return std::nullopt;
      term = term_;
    }
    bool reset = false;
    for (std::optional<uint32_t> next = 0; next.has_value() && !reset;) {
      ReaderMutexLock lock(&mu_);
      reset = term_ != term;
      if (!reset) next = store_.aggregate().PlanChunk(*next, &plan);
    }
    if (reset) continue;
    EncodeAndCache(&plan, term, encoder);
    std::vector<std::shared_ptr<const std::string>> chunks;
    chunks.reserve(plan.pieces.size());
    for (FlowAggregate::EncodingPlan::Piece& piece : plan.pieces) {
      chunks.push_back(std::move(piece.bytes));
    }
    return chunks;
  }
}

FlowStateManager::ChunkChanges FlowStateManager::CopyChangedChunks(
    uint64_t known_term,
    const absl::flat_hash_map<uint32_t, uint64_t>& known) const {
  static const absl::flat_hash_map<uint32_t, uint64_t> kNone;
  while (true) {
    ChunkChanges out;
    {
      ReaderMutexLock lock(&mu_);
      out.term = term_;
      out.found = store_.has_aggregate();
    }
    if (!out.found) return out;
    const auto& compare_to = out.term == known_term ? known : kNone;
    bool reset = false;
    for (std::optional<uint32_t> next = 0; next.has_value() && !reset;) {
      ReaderMutexLock lock(&mu_);
      reset = term_ != out.term;
      if (!reset) {
        next = store_.aggregate().CopyChunkIfChanged(*next, compare_to,
                                                     &out.chunks);
      }
    }
    if (!reset) return out;
  }
}

std::vector<kv::KeyValue> FlowStateManager::Finish(Found found) const {
  std::optional<std::string> aggregate_json;
  if (found.encode_aggregate) {
    auto chunks =
        EncodeChunks(FlowAggregate::kJsonSlot, &FlowAggregate::EncodeJsonChunk);
    // Gone (a reset since the keys were read): left out, as a key deleted.
    if (chunks.has_value())
      aggregate_json = FlowAggregate::AssembleJson(*chunks);
  }
  std::vector<kv::KeyValue> out;
  out.reserve(found.entries.size());
  for (kv::StoredEntry& entry : found.entries) {
    const bool aggregate = entry.value == nullptr && entry.key == kFlowStateKey;
    if (aggregate && found.encode_aggregate && !aggregate_json.has_value()) {
      continue;
    }
    kv::KeyValue& kv = out.emplace_back();
    kv.key = std::move(entry.key);
    if (aggregate && aggregate_json.has_value()) {
      kv.value = *aggregate_json;
    } else if (entry.value != nullptr) {
      kv.value = *entry.value;
    }
  }
  return out;
}

absl::StatusOr<std::string> FlowStateManager::Get(
    const std::string& key) const {
  absl::StatusOr<std::vector<kv::KeyValue>> found = BatchGet({key});
  if (!found.ok()) return found.status();
  if (found->empty()) return absl::NotFoundError(absl::StrCat("no key ", key));
  return std::move(found->front().value);
}

absl::StatusOr<std::vector<kv::KeyValue>> FlowStateManager::BatchGet(
    const std::vector<std::string>& keys) const {
  Found found;
  {
    ReaderMutexLock lock(&mu_);
    for (const std::string& key : keys) {
      if (key == kFlowStateKey) {
        if (!store_.has_aggregate()) continue;
        // Asked for more than once, it is encoded once.
        found.encode_aggregate = true;
        found.entries.push_back({key, nullptr});
        continue;
      }
      kv::Bytes value = store_.node_keys().Find(key);
      if (value != nullptr) found.entries.push_back({key, std::move(value)});
    }
  }
  return Finish(std::move(found));
}

absl::StatusOr<kv::RangeResponse> FlowStateManager::Range(
    const kv::RangeRequest& req) const {
  Found found;
  {
    ReaderMutexLock lock(&mu_);
    absl::StatusOr<kv::StoredRange> stored = store_.node_keys().Range(req);
    if (!stored.ok()) return stored.status();
    found.entries = std::move(stored->entries);
    found.more = stored->more;
    const std::string key(kFlowStateKey);
    auto at = std::lower_bound(found.entries.begin(), found.entries.end(), key,
                               [](const kv::StoredEntry& e,
                                  const std::string& k) { return e.key < k; });
    // Past a cut, it is not part of this page.
    if (store_.has_aggregate() && kv::InRange(req, key) &&
        !(found.more && at == found.entries.end())) {
      found.entries.insert(at, {key, nullptr});
      if (req.limit > 0 &&
          found.entries.size() > static_cast<uint64_t>(req.limit)) {
        found.entries.pop_back();
        found.more = true;
      }
      found.encode_aggregate = !req.keys_only;
    }
  }
  kv::RangeResponse out;
  out.more = found.more;
  out.kvs = Finish(std::move(found));
  return out;
}

uint64_t FlowStateManager::size() const {
  ReaderMutexLock lock(&mu_);
  return store_.key_count();
}

}  // namespace metasrv::core
