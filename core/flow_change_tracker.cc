#include "core/flow_change_tracker.h"

#include <utility>

namespace metasrv::core {

FlowChangeTracker::FlowChangeTracker(ChunkEncoding encoding,
                                     ChunkEncoder encoder, uint64_t term)
    : encoding_(encoding), encoder_(encoder), term_(term) {}

void FlowChangeTracker::Diff(absl::Span<const AggregateFlow> before,
                             absl::Span<const AggregateFlow> after,
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
  FlowStateManager::AggregateSnapshot now = state.Snapshot();
  Update update;
  update.term = now.term;
  update.found = now.found;
  update.reset = now.term != term_;
  if (update.reset) {
    chunks_.clear();
    term_ = now.term;
  }
  // Both snapshots ascend by chunk id: walk them together.
  auto old = chunks_.begin();
  for (const PinnedChunk& chunk : now.chunks) {
    // Chunks that emptied since: all their flows left.
    for (; old != chunks_.end() && (*old)->chunk_id() < chunk->chunk_id();
         ++old) {
      Diff((*old)->flows(), {}, &update);
    }
    const bool had = old != chunks_.end() &&
                     (*old)->chunk_id() == chunk->chunk_id();
    if (!had) {
      Diff({}, chunk->flows(), &update);
    } else {
      if ((*old)->version() != chunk->version()) {
        Diff((*old)->flows(), chunk->flows(), &update);
      }
      ++old;
    }
    update.chunks.push_back(chunk->Encoded(encoding_, encoder_));
  }
  for (; old != chunks_.end(); ++old) Diff((*old)->flows(), {}, &update);
  chunks_ = std::move(now.chunks);
  if (update.reset) update.removed.clear();
  return update;
}

}  // namespace metasrv::core
