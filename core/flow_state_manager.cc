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
  // The aggregate, taken under the same lock as `entries`, when it is to be
  // encoded.
  std::vector<PinnedChunk> aggregate;
};

FlowStateManager::FlowStateManager(FlowStateLimits limits, const Clock* clock)
    : limits_(limits), clock_(clock), store_(limits_) {}

void FlowStateManager::Notify() const {
  FlowStateListener* listener = listener_.load();
  if (listener != nullptr) listener->OnFlowStateChanged();
}

absl::Status FlowStateManager::Heartbeat(uint64_t node_id,
                                         NodeHeartbeat heartbeat,
                                         std::optional<uint64_t> term,
                                         std::optional<uint64_t>* evicted) {
  bool changed = heartbeat.report.has_value();
  const int64_t now = absl::ToUnixMillis(clock_->Now());
  const int64_t mono = absl::ToUnixMillis(clock_->Monotonic());
  {
    MutexLock lock(&mu_);
    if (term.has_value() && *term != term_) {
      return absl::AbortedError(
          absl::StrCat("heartbeat of node ", node_id,
                       " not recorded: the state was reset "
                       "since term ",
                       *term, " (leadership changed)"));
    }
    if (store_.AtNodeBound(node_id)) {
      const std::optional<uint64_t> victim =
          store_.Evictable(mono, heartbeat.origin);
      if (victim.has_value()) {
        store_.ForgetNodes({*victim});
        changed = true;
        if (evicted != nullptr) *evicted = victim;
      }
    }
    absl::Status stored =
        store_.Heartbeat(node_id, std::move(heartbeat), now, mono);
    if (!stored.ok()) return stored;
  }
  if (changed) Notify();
  return absl::OkStatus();
}

absl::Status FlowStateManager::RecordNode(const ClusterNode& node,
                                          std::optional<uint64_t> term) {
  const int64_t now = absl::ToUnixMillis(clock_->Now());
  const int64_t mono = absl::ToUnixMillis(clock_->Monotonic());
  MutexLock lock(&mu_);
  if (term.has_value() && *term != term_) {
    return absl::AbortedError(
        absl::StrCat("cluster info of node ", node.node_id,
                     " not recorded: the state was reset since term ", *term,
                     " (leadership changed)"));
  }
  return store_.RecordClusterNode(node, now, mono);
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

absl::StatusOr<uint64_t> FlowStateManager::ForgetNodes(
    absl::Span<const uint64_t> node_ids) {
  if (node_ids.empty()) {
    return absl::InvalidArgumentError("ForgetNodes needs at least one node id");
  }
  uint64_t forgotten = 0;
  {
    MutexLock lock(&mu_);
    forgotten = store_.ForgetNodes(node_ids);
  }
  if (forgotten > 0) Notify();
  return forgotten;
}

std::vector<uint64_t> FlowStateManager::ExpireSilentNodes() {
  if (limits_.node_report_ttl <= absl::ZeroDuration()) return {};
  const int64_t cutoff = absl::ToUnixMillis(clock_->Monotonic()) -
                         absl::ToInt64Milliseconds(limits_.node_report_ttl);
  std::vector<uint64_t> expired;
  {
    MutexLock lock(&mu_);
    expired = store_.ExpireSilent(cutoff);
  }
  if (!expired.empty()) Notify();
  return expired;
}

IdleExpiry FlowStateManager::ExpireIdleNodes() {
  if (limits_.node_max_idle_time <= absl::ZeroDuration()) return {};
  const int64_t cutoff = absl::ToUnixMillis(clock_->Monotonic()) -
                         absl::ToInt64Milliseconds(limits_.node_max_idle_time);
  MutexLock lock(&mu_);
  return store_.ExpireIdle(cutoff);
}

ResetResult FlowStateManager::Reset() {
  FlowStateStore old(limits_);
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

FlowStateManager::AggregateSnapshot FlowStateManager::Snapshot() const {
  AggregateSnapshot out;
  ReaderMutexLock lock(&mu_);
  out.term = term_;
  out.found = store_.has_aggregate();
  if (out.found) out.chunks = store_.aggregate().Snapshot();
  return out;
}

std::optional<FlowStateValue> FlowStateManager::Aggregate() const {
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
  std::vector<uint32_t> ids(flow_ids.begin(), flow_ids.end());
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  std::vector<PinnedChunk> chunks;
  {
    ReaderMutexLock lock(&mu_);
    if (!store_.has_aggregate()) return false;
    chunks = ids.empty() ? store_.aggregate().Snapshot()
                         : store_.aggregate().Snapshot(ids);
  }
  if (ids.empty()) {
    for (const PinnedChunk& chunk : chunks) visit(chunk->flows());
    return true;
  }
  std::vector<AggregateFlow> batch = FlowAggregate::Select(chunks, ids);
  if (!batch.empty()) visit(batch);
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

std::optional<std::vector<std::shared_ptr<const std::string>>>
FlowStateManager::EncodeChunks(ChunkEncoding encoding,
                               ChunkEncoder encoder) const {
  AggregateSnapshot snapshot = Snapshot();
  if (!snapshot.found) return std::nullopt;
  std::vector<std::shared_ptr<const std::string>> out;
  out.reserve(snapshot.chunks.size());
  for (const PinnedChunk& chunk : snapshot.chunks) {
    out.push_back(chunk->Encoded(encoding, encoder));
  }
  return out;
}

bool FlowStateManager::CachedChunks(
    ChunkEncoding encoding,
    std::optional<std::vector<std::shared_ptr<const std::string>>>* out) const {
  AggregateSnapshot snapshot = Snapshot();
  if (!snapshot.found) {
    *out = std::nullopt;
    return true;
  }
  std::vector<std::shared_ptr<const std::string>> chunks;
  chunks.reserve(snapshot.chunks.size());
  for (const PinnedChunk& chunk : snapshot.chunks) {
    std::shared_ptr<const std::string> bytes = chunk->Cached(encoding);
    if (bytes == nullptr) return false;
    chunks.push_back(std::move(bytes));
  }
  *out = std::move(chunks);
  return true;
}

std::vector<kv::KeyValue> FlowStateManager::ToKeyValues(Found found) {
  std::string aggregate_json;
  if (found.encode_aggregate) {
    aggregate_json = FlowAggregate::EncodeJson(found.aggregate);
    found.aggregate.clear();  // Unpinned as soon as encoded.
  }
  std::vector<kv::KeyValue> out;
  out.reserve(found.entries.size());
  for (kv::StoredEntry& entry : found.entries) {
    kv::KeyValue& kv = out.emplace_back();
    kv.key = std::move(entry.key);
    if (entry.value != nullptr) {
      kv.value = entry.value->bytes();
    } else if (found.encode_aggregate && kv.key == kFlowStateKey) {
      kv.value = aggregate_json;
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
        if (!found.encode_aggregate) {
          found.encode_aggregate = true;
          found.aggregate = store_.aggregate().Snapshot();
        }
        found.entries.push_back({key, nullptr});
        continue;
      }
      kv::Bytes value = store_.node_keys().Find(key);
      if (value != nullptr) found.entries.push_back({key, std::move(value)});
    }
  }
  return ToKeyValues(std::move(found));
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
      if (found.encode_aggregate) {
        found.aggregate = store_.aggregate().Snapshot();
      }
    }
  }
  kv::RangeResponse out;
  out.more = found.more;
  out.kvs = ToKeyValues(std::move(found));
  return out;
}

uint64_t FlowStateManager::size() const {
  ReaderMutexLock lock(&mu_);
  return store_.key_count();
}

}  // namespace metasrv::core
