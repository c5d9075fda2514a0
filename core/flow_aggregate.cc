#include "core/flow_aggregate.h"

#include <algorithm>
#include <utility>

namespace metasrv::core {
namespace {

// Moves one field of one node from `old_stat` to `new_stat` (either may be
// null or lack the field), in `max` and in the reader's copy of the maximum,
// `value` and `holder` of `flow` (zero while no node has the field).
template <typename T>
void ApplyField(FieldMax<T>& max, uint64_t node, FlowField field,
                const FlowStat* old_stat, const FlowStat* new_stat,
                T FlowStat::*member, AggregateFlow& flow,
                uint64_t AggregateFlow::*holder) {
  const bool had = old_stat != nullptr && old_stat->has(field);
  const bool has = new_stat != nullptr && new_stat->has(field);
  T& value = flow.stat.*member;
  uint64_t& by = flow.*holder;
  if (had && has) {
    max.Update(node, old_stat->*member, new_stat->*member, value, by);
  } else if (had) {
    max.Remove(node, old_stat->*member, value, by);
  } else if (has) {
    max.Add(node, new_stat->*member, value, by);
  }
  if (max.empty()) {
    flow.stat.fields &= static_cast<uint8_t>(~field);
    value = T{};
    by = 0;
  } else {
    flow.stat.fields |= field;
  }
}

}  // namespace

std::shared_ptr<const std::string> ChunkView::Encoded(
    ChunkEncoding encoding, ChunkEncoder encoder) const {
  MutexLock lock(&mu_);
  std::shared_ptr<const std::string>& bytes =
      encoded_[static_cast<int>(encoding)];
  // Encoding under the view's own lock: a second reader of the same view
  // waits for the bytes rather than making them again.
  if (bytes == nullptr) {
    bytes = std::make_shared<const std::string>(encoder(flows_));
  }
  return bytes;
}

std::shared_ptr<const std::string> ChunkView::Cached(
    ChunkEncoding encoding) const {
  MutexLock lock(&mu_);
  return encoded_[static_cast<int>(encoding)];
}

PinnedChunk::PinnedChunk(std::shared_ptr<const ChunkView> view)
    : view_(std::move(view)) {
  view_->pins_.fetch_add(1, std::memory_order_relaxed);
}

PinnedChunk& PinnedChunk::operator=(PinnedChunk&& other) noexcept {
  if (this != &other) {
    Release();
    view_ = std::move(other.view_);
  }
  return *this;
}

void PinnedChunk::Release() {
  if (view_ == nullptr) return;
  // Release: this reader's reads of the view come before a writer's change
  // of it in place, which it makes only after reading zero (acquire).
  view_->pins_.fetch_sub(1, std::memory_order_release);
  view_.reset();
}

size_t FlowAggregate::Chunk::Find(uint32_t id) const {
  const size_t guess = id & ((1u << kChunkBits) - 1);
  if (guess < slots.size() && slots[guess].first == id) return guess;
  return std::lower_bound(
             slots.begin(), slots.end(), id,
             [](const auto& e, uint32_t v) { return e.first < v; }) -
         slots.begin();
}

ChunkView& FlowAggregate::ChangeView(uint32_t chunk_id, Chunk& chunk) {
  if (chunk.view == nullptr) {
    chunk.view = std::make_shared<ChunkView>();
    chunk.view->chunk_id_ = chunk_id;
  } else if (chunk.view->pins_.load(std::memory_order_acquire) > 0) {
    // A reader holds this state of the chunk: it keeps it, the chunk moves
    // on in a copy.
    auto copy = std::make_shared<ChunkView>();
    copy->chunk_id_ = chunk_id;
    copy->flows_ = chunk.view->flows_;
    chunk.view = std::move(copy);
  } else {
    MutexLock lock(&chunk.view->mu_);
    for (auto& bytes : chunk.view->encoded_) bytes.reset();
  }
  chunk.view->version_ = ++next_version_;
  return *chunk.view;
}

void FlowAggregate::ApplyFlow(Chunk& chunk, ChunkView& view, uint64_t node,
                              const FlowStat* old_stat,
                              const FlowStat* new_stat) {
  const uint32_t id =
      old_stat != nullptr ? old_stat->flow_id : new_stat->flow_id;
  const size_t at = chunk.Find(id);
  if (at == chunk.slots.size() || chunk.slots[at].first != id) {
    if (new_stat == nullptr) return;
    chunk.slots.emplace(chunk.slots.begin() + at, id, FlowSlot());
    view.flows_.emplace(view.flows_.begin() + at)->stat.flow_id = id;
    ++flow_count_;
  }
  FlowSlot& slot = chunk.slots[at].second;
  AggregateFlow& flow = view.flows_[at];
#define METASRV_FIELD_APPLY(Name, member, ...)                                \
  ApplyField(slot.member, node, k##Name, old_stat, new_stat, &FlowStat::member, \
             flow, &AggregateFlow::member##_node);
  METASRV_FLOW_FIELDS(METASRV_FIELD_APPLY)
#undef METASRV_FIELD_APPLY
  if (slot.empty()) {
    chunk.slots.erase(chunk.slots.begin() + at);
    view.flows_.erase(view.flows_.begin() + at);
    --flow_count_;
  }
}

void FlowAggregate::Replace(uint64_t node, const FlowStateValue& old_report,
                            const FlowStateValue& new_report) {
  // Both reports are sorted by flow id: walk them together and list the flows
  // that changed, in id order, as (old, new) pairs; either side may be null.
  struct Change {
    const FlowStat* old_stat;  // The node's previous entry, or null.
    const FlowStat* new_stat;  // Its new entry, or null.
    uint32_t id() const { return (old_stat ? old_stat : new_stat)->flow_id; }
  };
  const std::vector<FlowStat>& olds = old_report.flows();
  const std::vector<FlowStat>& news = new_report.flows();
  std::vector<Change> changes;
  changes.reserve(std::max(olds.size(), news.size()));
  size_t i = 0, j = 0;
  while (i < olds.size() || j < news.size()) {
    if (j == news.size() ||
        (i < olds.size() && olds[i].flow_id < news[j].flow_id)) {
      changes.push_back({&olds[i++], nullptr});
    } else if (i == olds.size() || news[j].flow_id < olds[i].flow_id) {
      changes.push_back({nullptr, &news[j++]});
    } else {
      if (olds[i] != news[j]) changes.push_back({&olds[i], &news[j]});
      ++i;
      ++j;
    }
  }
  // Chunk by chunk (the changes are in id order): one new view state each.
  for (size_t c = 0; c < changes.size();) {
    const uint32_t chunk_id = changes[c].id() >> kChunkBits;
    Chunk& chunk = chunks_[chunk_id];
    ChunkView& view = ChangeView(chunk_id, chunk);
    for (; c < changes.size() && changes[c].id() >> kChunkBits == chunk_id;
         ++c) {
      ApplyFlow(chunk, view, node, changes[c].old_stat, changes[c].new_stat);
    }
    if (chunk.slots.empty()) chunks_.erase(chunk_id);
  }
}

std::vector<PinnedChunk> FlowAggregate::Snapshot() const {
  std::vector<PinnedChunk> out;
  out.reserve(chunks_.size());
  for (const auto& [id, chunk] : chunks_)
    out.push_back(PinnedChunk(chunk.view));
  return out;
}

std::vector<PinnedChunk> FlowAggregate::Snapshot(
    absl::Span<const uint32_t> sorted_ids) const {
  std::vector<PinnedChunk> out;
  for (size_t i = 0; i < sorted_ids.size();) {
    const uint32_t chunk_id = sorted_ids[i] >> kChunkBits;
    auto it = chunks_.find(chunk_id);
    if (it != chunks_.end()) out.push_back(PinnedChunk(it->second.view));
    while (i < sorted_ids.size() && sorted_ids[i] >> kChunkBits == chunk_id)
      ++i;
  }
  return out;
}

std::vector<AggregateFlow> FlowAggregate::Select(
    absl::Span<const PinnedChunk> chunks,
    absl::Span<const uint32_t> sorted_ids) {
  std::vector<AggregateFlow> out;
  if (sorted_ids.empty()) {
    size_t n = 0;
    for (const PinnedChunk& chunk : chunks) n += chunk->flows().size();
    out.reserve(n);
    for (const PinnedChunk& chunk : chunks) {
      out.insert(out.end(), chunk->flows().begin(), chunk->flows().end());
    }
    return out;
  }
  size_t c = 0;
  for (uint32_t id : sorted_ids) {
    const uint32_t chunk_id = id >> kChunkBits;
    while (c < chunks.size() && chunks[c]->chunk_id() < chunk_id) ++c;
    if (c == chunks.size()) break;
    if (chunks[c]->chunk_id() != chunk_id) continue;
    absl::Span<const AggregateFlow> flows = chunks[c]->flows();
    auto it = std::lower_bound(
        flows.begin(), flows.end(), id,
        [](const AggregateFlow& f, uint32_t v) { return f.stat.flow_id < v; });
    if (it != flows.end() && it->stat.flow_id == id) out.push_back(*it);
  }
  return out;
}

uint64_t FlowAggregate::CountPresent(
    absl::Span<const uint32_t> sorted_ids) const {
  uint64_t n = 0;
  for (uint32_t id : sorted_ids) {
    auto c = chunks_.find(id >> kChunkBits);
    if (c == chunks_.end()) continue;
    const size_t at = c->second.Find(id);
    n += at < c->second.slots.size() && c->second.slots[at].first == id;
  }
  return n;
}

std::string FlowAggregate::EncodeJsonChunk(
    absl::Span<const AggregateFlow> flows) {
  FlowStateJsonParts parts;
  for (const AggregateFlow& flow : flows) {
    AppendFlowStateParts(flow.stat, &parts);
  }
  return JoinFlowStateParts(parts);
}

std::string FlowAggregate::AssembleJson(
    absl::Span<const std::shared_ptr<const std::string>> chunks) {
  std::vector<absl::string_view> views;
  views.reserve(chunks.size());
  for (const auto& chunk : chunks) views.push_back(*chunk);
  return AssembleFlowStateChunks(views);
}

std::string FlowAggregate::EncodeJson(absl::Span<const PinnedChunk> chunks) {
  std::vector<std::shared_ptr<const std::string>> parts;
  parts.reserve(chunks.size());
  for (const PinnedChunk& chunk : chunks) {
    parts.push_back(chunk->Encoded(ChunkEncoding::kJson, &EncodeJsonChunk));
  }
  return AssembleJson(parts);
}

}  // namespace metasrv::core
