// The cluster-wide flow-state aggregate, kept incrementally.
#ifndef METASRV_CORE_FLOW_AGGREGATE_H_
#define METASRV_CORE_FLOW_AGGREGATE_H_

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/btree_map.h"
#include "absl/container/flat_hash_map.h"
#include "absl/types/span.h"
#include "core/field_max.h"
#include "core/flow_state_codec.h"
#include "core/flow_state_value.h"

namespace metasrv::core {

// One flow of the aggregate, with the node that holds each field's max.
struct AggregateFlow {
  FlowStat stat;                     // The per-field maxima.
  uint64_t state_size_node = 0;      // Node with the max state size.
  uint64_t last_exec_time_node = 0;  // Node with the max last execution time.
  uint64_t start_time_node = 0;      // Node with the max start time.
};

// Turns one chunk's flows (ascending by id) into bytes. Must be a pure
// function of its input: the aggregate caches what it returns.
using ChunkEncoder = std::string (*)(absl::Span<const AggregateFlow> flows);

// Per flow, the max of each field over all nodes' reports.
//
// Replace() costs O(report size * log) and never looks at other nodes' flows.
// Flows are grouped in chunks of 1024 consecutive ids. An encoding of the
// whole aggregate (its JSON, or a reply's columns) is made chunk by chunk by
// a ChunkEncoder, and each chunk caches its bytes in the encoding's slot until
// one of its flows changes, so an encoding of an unchanged aggregate is the
// cached chunks, and after a change only that chunk is encoded again. It
// takes three steps (PlanEncoding, Encode, CacheEncoding) so that an owner
// that shares the aggregate between threads holds its lock only to copy what
// changed, not to encode it.
//
// Not thread-safe: the owner serializes access (const methods may run
// concurrently with each other).
class FlowAggregate {
 public:
  // Cache slots: one per encoding. Slot 0 is the JSON (EncodeJson); the
  // others are the owner's to use.
  static constexpr int kEncodingSlots = 4;
  static constexpr int kJsonSlot = 0;

  // What one encoding needs, taken from the aggregate at one instant: per
  // non-empty chunk, its cached bytes, or a copy of its flows to encode.
  struct EncodingPlan {
    struct Piece {
      uint32_t chunk_id = 0;                     // Which chunk.
      uint64_t version = 0;                      // Its version when planned.
      std::shared_ptr<const std::string> bytes;  // Encoded, or null.
      std::vector<AggregateFlow> flows;  // To encode when `bytes` is null.
    };
    int slot = 0;               // The encoding's cache slot.
    std::vector<Piece> pieces;  // Ascending by chunk id.
    bool encoded_any = false;   // Whether Encode() encoded a piece.
  };

  FlowAggregate() = default;
  FlowAggregate(FlowAggregate&&) = default;
  FlowAggregate& operator=(FlowAggregate&&) = default;

  // Replaces `node`'s contribution `old_report` with `new_report`. The caller
  // keeps each node's reports.
  void Replace(uint64_t node, const FlowStateValue& old_report,
               const FlowStateValue& new_report);

  // Step 1 of an encoding into `slot`: the plan, O(chunks + flows of
  // changed chunks).
  EncodingPlan PlanEncoding(int slot) const;
  // Step 1 a chunk at a time: adds the first non-empty chunk from chunk id
  // `from` on to `plan` and returns the chunk id to go on from; nullopt
  // when no chunk is left. An owner can release its lock between calls.
  std::optional<uint32_t> PlanChunk(uint32_t from, EncodingPlan* plan) const;
  // Step 2, needs no access to the aggregate: encodes the pieces without
  // cached bytes with `encoder` (the slot's encoder, always the same one).
  static void Encode(EncodingPlan* plan, ChunkEncoder encoder);
  // Step 3: caches the bytes of pieces whose chunk has not changed since.
  void CacheEncoding(const EncodingPlan& plan);

  // The JSON of kJsonSlot chunk encodings, in order (flow_state_codec.h).
  static std::string AssembleJson(
      absl::Span<const std::shared_ptr<const std::string>> chunks);
  // The JSON encoder of one chunk.
  static std::string EncodeJsonChunk(absl::Span<const AggregateFlow> flows);
  // The JSON, all three steps at once.
  std::string EncodeJson();

  // Copies the flows of the first chunk from chunk id `from` on into `out`
  // (replacing its contents), ascending by id, and returns the chunk id to
  // continue from; nullopt when no chunk is left.
  std::optional<uint32_t> CopyChunk(uint32_t from,
                                    std::vector<AggregateFlow>* out) const;
  // One chunk for an owner that keeps its own copy of the aggregate
  // (FlowChangeTracker): its id and version, and its flows when asked.
  struct ChunkCopy {
    uint32_t chunk_id = 0;             // Which chunk.
    uint64_t version = 0;              // Its version (never 0).
    bool copied = false;               // Whether `flows` holds its flows.
    std::vector<AggregateFlow> flows;  // Ascending by id, when `copied`.
  };
  // Appends the first non-empty chunk from chunk id `from` on to `out`, with
  // its flows unless its version is `known`'s entry for its id; returns the
  // chunk id to continue from, nullopt when no chunk is left. Versions are
  // only comparable within one aggregate.
  std::optional<uint32_t> CopyChunkIfChanged(
      uint32_t from, const absl::flat_hash_map<uint32_t, uint64_t>& known,
      std::vector<ChunkCopy>* out) const;

  // The flows of `flow_ids` that exist, ascending by id (duplicates once);
  // all flows when `flow_ids` is empty.
  std::vector<AggregateFlow> Read(absl::Span<const uint32_t> flow_ids) const;

  // Flows in the aggregate now.
  uint64_t flow_count() const { return flow_count_; }

 private:
  // One flow's maxima.
  struct FlowSlot {
    FieldMax<uint64_t> state_size;     // Max state size.
    FieldMax<int64_t> last_exec_time;  // Max last execution time.
    FieldMax<int64_t> start_time;      // Max start time.
    bool empty() const {
      return state_size.empty() && last_exec_time.empty() && start_time.empty();
    }
    AggregateFlow ToFlow(uint32_t flow_id) const;
  };

  // Flows whose ids share the same id >> kChunkBits, in a vector sorted by
  // id: contiguous, and since flow ids are dense, entry `id % 1024` is
  // usually the one sought (see Find).
  struct Chunk {
    using Flows = std::vector<std::pair<uint32_t, FlowSlot>>;
    // The entry of `id`, or where it would be inserted.
    Flows::iterator Find(uint32_t id);
    Flows::const_iterator Find(uint32_t id) const;

    Flows flows;           // Sorted by id.
    uint64_t version = 0;  // Bumped by every change of `flows`.
    // Per encoding slot, the bytes of `flows`; null when a flow changed
    // since they were made.
    std::array<std::shared_ptr<const std::string>, kEncodingSlots> encoded;
  };

  static constexpr int kChunkBits = 10;

  // Applies one flow's change in `chunk`.
  void ApplyFlow(Chunk& chunk, uint64_t node, const FlowStat* old_stat,
                 const FlowStat* new_stat);

  absl::btree_map<uint32_t, Chunk> chunks_;  // Chunks by chunk id.
  uint64_t next_version_ = 0;                // Last chunk version given.
  uint64_t flow_count_ = 0;                  // Flows with at least one field.
};

}  // namespace metasrv::core

#endif  // METASRV_CORE_FLOW_AGGREGATE_H_
