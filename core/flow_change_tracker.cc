#include "core/flow_change_tracker.h"

#include <utility>

namespace metasrv::core {

FlowChangeTracker::FlowChangeTracker(ChunkEncoder encoder, uint64_t term)
    : encoder_(encoder), term_(term) {}

void FlowChangeTracker::Diff(const std::vector<AggregateFlow>& before,
                             const std::vector<AggregateFlow>& after,
                             Update* update) {
  size_t b = 0;
  for (const AggregateFlow& flow : after) {
    const uint32_t id = flow.stat.flow_id;
    while (b < before.size() && before[b].stat.flow_id < id) {
      update->removed.push_back(before[b++].stat.flow_id);
    }
    if (b < before.size() && before[b].stat.flow_id == id) {
      if (before[b].stat != flow.stat) update->changed.push_back(flow);
      ++b;
    } else {
      update->changed.push_back(flow);
    }
  }
  for (; b < before.size(); ++b)
    update->removed.push_back(before[b].stat.flow_id);
}

FlowChangeTracker::Update FlowChangeTracker::Advance(
    const FlowStateManager& state) {
  FlowStateManager::ChunkChanges changes =
      state.CopyChangedChunks(term_, versions_);
  Update update;
  update.term = changes.term;
  update.found = changes.found;
  update.reset = changes.term != term_;
  if (update.reset) {
    chunks_.clear();
    versions_.clear();
    term_ = changes.term;
  }
  absl::btree_map<uint32_t, Chunk> next;
  auto old = chunks_.begin();
  for (FlowAggregate::ChunkCopy& copy : changes.chunks) {
    // Chunks that emptied since: all their flows left.
    for (; old != chunks_.end() && old->first < copy.chunk_id; ++old) {
      Diff(old->second.flows, {}, &update);
    }
    const bool had = old != chunks_.end() && old->first == copy.chunk_id;
    Chunk chunk;
    if (!copy.copied) {
      chunk = std::move(old->second);  // Unchanged: its version is known.
    } else {
      Diff(had ? old->second.flows : std::vector<AggregateFlow>{}, copy.flows,
           &update);
      chunk.version = copy.version;
      chunk.bytes = std::make_shared<const std::string>(encoder_(copy.flows));
      chunk.flows = std::move(copy.flows);
    }
    if (had) ++old;
    update.chunks.push_back(chunk.bytes);
    next.emplace(copy.chunk_id, std::move(chunk));
  }
  for (; old != chunks_.end(); ++old) Diff(old->second.flows, {}, &update);
  chunks_ = std::move(next);
  versions_.clear();
  for (const auto& [id, chunk] : chunks_) versions_.emplace(id, chunk.version);
  if (update.reset) update.removed.clear();
  return update;
}

}  // namespace metasrv::core
