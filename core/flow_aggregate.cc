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

FlowAggregate::Chunk::Flows::iterator FlowAggregate::Chunk::Find(uint32_t id) {
  const size_t guess = id & ((1u << kChunkBits) - 1);
  if (guess < flows.size() && flows[guess].first == id) return flows.begin() + guess;
  return std::lower_bound(
      flows.begin(), flows.end(), id,
      [](const std::pair<uint32_t, FlowSlot>& e, uint32_t v) { return e.first < v; });
}

FlowAggregate::Chunk* FlowAggregate::GetOrCreateChunk(uint32_t chunk_id) {
  {
    ReaderMutexLock lock(&dir_mu_);
    auto it = chunks_.find(chunk_id);
    if (it != chunks_.end()) return it->second.get();
  }
  MutexLock lock(&dir_mu_);
  auto& slot = chunks_[chunk_id];
  if (slot == nullptr) slot = std::make_unique<Chunk>();
  return slot.get();
}

void FlowAggregate::ApplyFlow(Chunk& chunk, uint64_t node,
                              const FlowStat* old_stat,
                              const FlowStat* new_stat) {
  const uint32_t id = old_stat != nullptr ? old_stat->flow_id : new_stat->flow_id;
  auto it = chunk.Find(id);
  if (it == chunk.flows.end() || it->first != id) {
    if (new_stat == nullptr) return;
    it = chunk.flows.emplace(it, id, FlowSlot());
    flow_count_.fetch_add(1, std::memory_order_relaxed);
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
    flow_count_.fetch_sub(1, std::memory_order_relaxed);
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
  // One chunk lock per run of changes in the same chunk.
  for (size_t begin = 0; begin < changes.size();) {
    const uint32_t chunk_id = changes[begin].id() >> kChunkBits;
    size_t end = begin + 1;
    while (end < changes.size() && (changes[end].id() >> kChunkBits) == chunk_id) {
      ++end;
    }
    Chunk* chunk = GetOrCreateChunk(chunk_id);
    MutexLock lock(&chunk->mu);
    chunk->json.reset();
    for (size_t k = begin; k < end; ++k) {
      ApplyFlow(*chunk, node, changes[k].old_stat, changes[k].new_stat);
    }
    begin = end;
  }
}

std::string FlowAggregate::EncodeJson() const {
  std::vector<std::shared_ptr<const FlowStateJsonParts>> parts;
  {
    ReaderMutexLock dir(&dir_mu_);
    parts.reserve(chunks_.size());
    for (const auto& [id, chunk] : chunks_) {
      MutexLock lock(&chunk->mu);
      if (chunk->json == nullptr) {
        auto json = std::make_shared<FlowStateJsonParts>();
        for (const auto& [flow_id, slot] : chunk->flows) {
          AppendFlowStateParts(slot.ToFlow(flow_id).stat, json.get());
        }
        chunk->json = std::move(json);
      }
      parts.push_back(chunk->json);
    }
  }
  std::vector<const FlowStateJsonParts*> ptrs;
  ptrs.reserve(parts.size());
  for (const auto& p : parts) ptrs.push_back(p.get());
  return AssembleFlowState(ptrs);
}

void FlowAggregate::Visit(absl::Span<const uint32_t> flow_ids,
                          const Visitor& visit) const {
  std::vector<AggregateFlow> batch;
  ReaderMutexLock dir(&dir_mu_);
  if (flow_ids.empty()) {
    // One batch per chunk, copied under its lock and visited after.
    for (const auto& [id, chunk] : chunks_) {
      batch.clear();
      {
        MutexLock lock(&chunk->mu);
        batch.reserve(chunk->flows.size());
        for (const auto& [flow_id, slot] : chunk->flows) {
          batch.push_back(slot.ToFlow(flow_id));
        }
      }
      if (!batch.empty()) visit(batch);
    }
    return;
  }
  std::vector<uint32_t> ids(flow_ids.begin(), flow_ids.end());
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  for (uint32_t id : ids) {
    auto c = chunks_.find(id >> kChunkBits);
    if (c == chunks_.end()) continue;
    MutexLock lock(&c->second->mu);
    auto it = c->second->Find(id);
    if (it != c->second->flows.end() && it->first == id) {
      batch.push_back(it->second.ToFlow(id));
    }
  }
  if (!batch.empty()) visit(batch);
}

std::vector<AggregateFlow> FlowAggregate::Read(
    absl::Span<const uint32_t> flow_ids) const {
  std::vector<AggregateFlow> out;
  if (flow_ids.empty()) out.reserve(flow_count());
  Visit(flow_ids, [&](absl::Span<const AggregateFlow> flows) {
    out.insert(out.end(), flows.begin(), flows.end());
  });
  return out;
}

}  // namespace metasrv::core
