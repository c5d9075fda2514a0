// FlowChangeTracker: the aggregate as of the last look, and what changed.
#ifndef METASRV_CORE_FLOW_CHANGE_TRACKER_H_
#define METASRV_CORE_FLOW_CHANGE_TRACKER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/flow_aggregate.h"
#include "core/flow_state_manager.h"

namespace metasrv::core {

// Keeps the aggregate's snapshot (FlowStateManager::Snapshot) of its last
// Advance(). Advance() takes a new one and, from that one instant, gives
// both the whole state (every chunk's bytes in one encoding, cached by the
// chunk views) and the change since the previous Advance(), flow by flow,
// comparing only the chunks whose version moved. A chunk whose version
// moved without any flow's stat changing (a change of which node holds a
// max) yields no changed flow.
//
// Not thread-safe: one owner, on one thread.
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

  // Chunks are encoded as `encoding` by `encoder`; `term` is the term the
  // tracker starts in (with no flows).
  FlowChangeTracker(ChunkEncoding encoding, ChunkEncoder encoder,
                    uint64_t term);

  // Brings the tracker up to `state` now and says what changed.
  Update Advance(const FlowStateManager& state);

 private:
  // Adds to `update` the flows of `after` that differ from `before` and the
  // ids of those only in `before` (both ascending).
  static void Diff(absl::Span<const AggregateFlow> before,
                   absl::Span<const AggregateFlow> after, Update* update);

  const ChunkEncoding encoding_;     // The encoding of the whole state.
  const ChunkEncoder encoder_;       // Encodes a chunk's flows.
  uint64_t term_;                    // Term of the snapshot.
  std::vector<PinnedChunk> chunks_;  // The last snapshot, ascending by id.
};

}  // namespace metasrv::core

#endif  // METASRV_CORE_FLOW_CHANGE_TRACKER_H_
