// FlowChangeTracker: a private copy of the aggregate that says what changed.
#ifndef METASRV_CORE_FLOW_CHANGE_TRACKER_H_
#define METASRV_CORE_FLOW_CHANGE_TRACKER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/btree_map.h"
#include "absl/container/flat_hash_map.h"
#include "core/flow_aggregate.h"
#include "core/flow_state_manager.h"

namespace metasrv::core {

// Keeps its own copy of the aggregate, chunk by chunk, as of its last
// Advance(), with each chunk encoded by one ChunkEncoder. Advance() copies
// only the chunks whose version moved since (FlowStateManager::
// CopyChangedChunks) and, from the same copy, gives both the whole state
// (every chunk's bytes, re-encoded only where a chunk changed) and the
// change since the previous Advance(), flow by flow. A chunk whose version
// moved without any flow's stat changing (a change of which node holds a
// max) yields no changed flow.
//
// Not thread-safe: one owner (WatchHub's publisher thread).
class FlowChangeTracker {
 public:
  struct Update {
    uint64_t term = 0;   // The term it is of.
    bool reset = false;  // The term differs from the previous Advance()'s.
    bool found = false;  // Whether there is an aggregate.
    // Flows new or with a different stat since the previous Advance() (all
    // flows after a reset), ascending by id.
    std::vector<AggregateFlow> changed;
    // Flows gone since the previous Advance() (none after a reset),
    // ascending.
    std::vector<uint32_t> removed;
    // The whole aggregate: every non-empty chunk's bytes, ascending.
    std::vector<std::shared_ptr<const std::string>> chunks;
  };

  // `encoder` makes each chunk's bytes; `term` is the term the copy starts
  // in (empty).
  FlowChangeTracker(ChunkEncoder encoder, uint64_t term);

  // Brings the copy up to `state` now and says what changed.
  Update Advance(const FlowStateManager& state);

 private:
  // One chunk as last seen.
  struct Chunk {
    uint64_t version = 0;                      // Its version then.
    std::vector<AggregateFlow> flows;          // Its flows, ascending.
    std::shared_ptr<const std::string> bytes;  // encoder_(flows).
  };

  // Adds to `update` the flows of `after` that differ from `before` and the
  // ids of those only in `before` (both ascending).
  static void Diff(const std::vector<AggregateFlow>& before,
                   const std::vector<AggregateFlow>& after, Update* update);

  const ChunkEncoder encoder_;               // Encodes a chunk's flows.
  uint64_t term_;                            // Term of the copy.
  absl::btree_map<uint32_t, Chunk> chunks_;  // The copy, by id.
  absl::flat_hash_map<uint32_t, uint64_t> versions_;  // Chunk id -> version.
};

}  // namespace metasrv::core

#endif  // METASRV_CORE_FLOW_CHANGE_TRACKER_H_
