#include "core/flow_aggregate.h"

#include <algorithm>
#include <utility>

namespace metasrv::core {
namespace {

// Moves one field of one node from `old_stat` to `new_stat` (either may be
// null or lack the field).
template <typename T>
void ApplyField(FieldMax<T>& max, uint64_t node, FlowField field,
                const FlowStat* old_stat, const FlowStat* new_stat,
                T FlowStat::*member) {
  const bool had = old_stat != nullptr && old_stat->has(field);
  const bool has = new_stat != nullptr && new_stat->has(field);
  if (had && has) {
    max.Update(node, old_stat->*member, new_stat->*member);
  } else if (had) {
    max.Remove(node, old_stat->*member);
  } else if (has) {
    max.Add(node, new_stat->*member);
  }
}

}  // namespace

AggregateFlow FlowAggregate::FlowSlot::ToFlow(uint32_t flow_id) const {
  AggregateFlow out;
  out.stat.flow_id = flow_id;
  if (!state_size.empty()) {
    out.stat.fields |= kStateSize;
    out.stat.state_size = state_size.value();
    out.state_size_node = state_size.holder();
  }
  if (!last_exec_time.empty()) {
    out.stat.fields |= kLastExecTime;
    out.stat.last_exec_time = last_exec_time.value();
    out.last_exec_time_node = last_exec_time.holder();
  }
  if (!start_time.empty()) {
    out.stat.fields |= kStartTime;
    out.stat.start_time = start_time.value();
    out.start_time_node = start_time.holder();
  }
  return out;
}

namespace {

// The entry of `id` in `flows` (sorted by id), or where it would go.
template <typename It>
It FindIn(It begin, It end, uint32_t id, size_t guess) {
  if (guess < static_cast<size_t>(end - begin) && begin[guess].first == id) {
    return begin + guess;
  }
  return std::lower_bound(
      begin, end, id, [](const auto& e, uint32_t v) { return e.first < v; });
}

}  // namespace

FlowAggregate::Chunk::Flows::iterator FlowAggregate::Chunk::Find(uint32_t id) {
  return FindIn(flows.begin(), flows.end(), id, id & ((1u << kChunkBits) - 1));
}

FlowAggregate::Chunk::Flows::const_iterator FlowAggregate::Chunk::Find(
    uint32_t id) const {
  return FindIn(flows.cbegin(), flows.cend(), id,
                id & ((1u << kChunkBits) - 1));
}

void FlowAggregate::ApplyFlow(Chunk& chunk, uint64_t node,
                              const FlowStat* old_stat,
                              const FlowStat* new_stat) {
  const uint32_t id =
      old_stat != nullptr ? old_stat->flow_id : new_stat->flow_id;
  auto it = chunk.Find(id);
  if (it == chunk.flows.end() || it->first != id) {
    if (new_stat == nullptr) return;
    it = chunk.flows.emplace(it, id, FlowSlot());
    ++flow_count_;
  }
  FlowSlot& slot = it->second;
  ApplyField(slot.state_size, node, kStateSize, old_stat, new_stat,
             &FlowStat::state_size);
  ApplyField(slot.last_exec_time, node, kLastExecTime, old_stat, new_stat,
             &FlowStat::last_exec_time);
  ApplyField(slot.start_time, node, kStartTime, old_stat, new_stat,
             &FlowStat::start_time);
  if (slot.empty()) {
    chunk.flows.erase(it);
    if (chunk.flows.empty()) Chunk::Flows().swap(chunk.flows);
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
  for (const Change& change : changes) {
    Chunk& chunk = chunks_[change.id() >> kChunkBits];
    for (auto& bytes : chunk.encoded) bytes.reset();
    chunk.version = ++next_version_;
    ApplyFlow(chunk, node, change.old_stat, change.new_stat);
  }
}

FlowAggregate::EncodingPlan FlowAggregate::PlanEncoding(int slot) const {
  EncodingPlan plan;
  plan.slot = slot;
  for (std::optional<uint32_t> next = 0; next.has_value();) {
    next = PlanChunk(*next, &plan);
  }
  return plan;
}

std::optional<uint32_t> FlowAggregate::PlanChunk(uint32_t from,
                                                 EncodingPlan* plan) const {
  auto it = chunks_.lower_bound(from);
  while (it != chunks_.end() && it->second.flows.empty()) ++it;
  if (it == chunks_.end()) return std::nullopt;
  const auto& [id, chunk] = *it;
  EncodingPlan::Piece& piece = plan->pieces.emplace_back();
  piece.chunk_id = id;
  piece.version = chunk.version;
  piece.bytes = chunk.encoded[plan->slot];
  if (piece.bytes == nullptr) {
    piece.flows.reserve(chunk.flows.size());
    for (const auto& [flow_id, flow] : chunk.flows) {
      piece.flows.push_back(flow.ToFlow(flow_id));
    }
  }
  return id + 1;
}

void FlowAggregate::Encode(EncodingPlan* plan, ChunkEncoder encoder) {
  for (EncodingPlan::Piece& piece : plan->pieces) {
    if (piece.bytes != nullptr) continue;
    piece.bytes = std::make_shared<const std::string>(encoder(piece.flows));
    std::vector<AggregateFlow>().swap(piece.flows);
    plan->encoded_any = true;
  }
}

void FlowAggregate::CacheEncoding(const EncodingPlan& plan) {
  if (!plan.encoded_any) return;
  for (const EncodingPlan::Piece& piece : plan.pieces) {
    auto it = chunks_.find(piece.chunk_id);
    if (it == chunks_.end() || it->second.version != piece.version) continue;
    std::shared_ptr<const std::string>& cached = it->second.encoded[plan.slot];
    if (cached == nullptr) cached = piece.bytes;
  }
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

std::string FlowAggregate::EncodeJson() {
  EncodingPlan plan = PlanEncoding(kJsonSlot);
  Encode(&plan, &EncodeJsonChunk);
  CacheEncoding(plan);
  std::vector<std::shared_ptr<const std::string>> chunks;
  for (const EncodingPlan::Piece& piece : plan.pieces) {
    chunks.push_back(piece.bytes);
  }
  return AssembleJson(chunks);
}

std::optional<uint32_t> FlowAggregate::CopyChunk(
    uint32_t from, std::vector<AggregateFlow>* out) const {
  out->clear();
  auto it = chunks_.lower_bound(from);
  if (it == chunks_.end()) return std::nullopt;
  out->reserve(it->second.flows.size());
  for (const auto& [flow_id, slot] : it->second.flows) {
    out->push_back(slot.ToFlow(flow_id));
  }
  return it->first + 1;
}

std::optional<uint32_t> FlowAggregate::CopyChunkIfChanged(
    uint32_t from, const absl::flat_hash_map<uint32_t, uint64_t>& known,
    std::vector<ChunkCopy>* out) const {
  auto it = chunks_.lower_bound(from);
  while (it != chunks_.end() && it->second.flows.empty()) ++it;
  if (it == chunks_.end()) return std::nullopt;
  const auto& [id, chunk] = *it;
  ChunkCopy& copy = out->emplace_back();
  copy.chunk_id = id;
  copy.version = chunk.version;
  auto seen = known.find(id);
  copy.copied = seen == known.end() || seen->second != chunk.version;
  if (copy.copied) {
    copy.flows.reserve(chunk.flows.size());
    for (const auto& [flow_id, flow] : chunk.flows) {
      copy.flows.push_back(flow.ToFlow(flow_id));
    }
  }
  return id + 1;
}

std::vector<AggregateFlow> FlowAggregate::Read(
    absl::Span<const uint32_t> flow_ids) const {
  std::vector<AggregateFlow> out;
  if (flow_ids.empty()) {
    out.reserve(flow_count_);
    for (const auto& [id, chunk] : chunks_) {
      for (const auto& [flow_id, slot] : chunk.flows) {
        out.push_back(slot.ToFlow(flow_id));
      }
    }
    return out;
  }
  std::vector<uint32_t> ids(flow_ids.begin(), flow_ids.end());
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  for (uint32_t id : ids) {
    auto c = chunks_.find(id >> kChunkBits);
    if (c == chunks_.end()) continue;
    auto it = c->second.Find(id);
    if (it != c->second.flows.end() && it->first == id) {
      out.push_back(it->second.ToFlow(id));
    }
  }
  return out;
}

}  // namespace metasrv::core
