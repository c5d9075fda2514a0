// GetFlowState's (and WatchFlowState's) columns: the one encoder of a
// GetFlowStateResponse. The whole aggregate is encoded a chunk of flows at a
// time and cached by the core until a flow of the chunk changes, then sent
// as those cached bytes without copying them; some flows are encoded alike,
// uncached.
//
// Protobuf lets a packed repeated field come as several runs in one message,
// which parsers concatenate: each chunk's bytes are a run of every column, so
// the chunks in order, after the `found` field, are a valid
// metasrv.v1.GetFlowStateResponse with every flow in ascending order.
#ifndef METASRV_SERVER_CODEC_FLOW_STATE_COLUMNS_H_
#define METASRV_SERVER_CODEC_FLOW_STATE_COLUMNS_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "core/flow_state_manager.h"
#include "server/rpc/shared_bytes.h"

namespace metasrv::server {

// A GetFlowStateResponse for all flows, as chunks of encoded bytes.
struct EncodedFlowState {
  bool found = false;  // Whether there is any flow state.
  // Each chunk's runs of the columns, ascending by flow id.
  std::vector<std::shared_ptr<const std::string>> chunks;
  // Bytes of the whole GetFlowStateResponse.
  size_t size() const;
};

// The aggregate's columns (with `with_nodes`, the node columns too). Encodes
// only chunks that changed since the last call; thread-safe.
EncodedFlowState EncodeFlowStateColumns(
    const core::FlowStateManager& flow_state, bool with_nodes);

// The flows of `flow_ids` that exist (all when it is empty), encoded now
// and not cached, ascending by flow id; with `with_nodes`, the node columns
// too. Thread-safe.
EncodedFlowState EncodeFlowStateColumns(
    const core::FlowStateManager& flow_state,
    absl::Span<const uint32_t> flow_ids, bool with_nodes);

// The chunks of the KV's `__flow/state` JSON (core::ChunkEncoding::kJson,
// the members FlowAggregate::AssembleJson joins), of one instant; encodes
// only chunks that changed. Thread-safe.
EncodedFlowState EncodeFlowStateJson(const core::FlowStateManager& flow_state);

// EncodeFlowStateColumns()'s answer when no chunk needs encoding (every one
// is cached): cheap enough to make on a loop thread. nullopt when some chunk
// would need encoding (then call EncodeFlowStateColumns off it).
std::optional<EncodedFlowState> CachedFlowStateColumns(
    const core::FlowStateManager& flow_state, bool with_nodes);

// `state` as a serialized GetFlowStateResponse, after `prefix` (the bytes of
// an enclosing message that come before it, if any): the chunks are
// referenced, not copied.
SharedPieces ToPieces(const EncodedFlowState& state, std::string prefix = "");

// The slots of the aggregate's view cache these encodings use (core knows
// nothing of them; one encoder per slot).
inline constexpr core::ChunkEncoding kColumnsSlot =
    core::ChunkEncoding::kReaderSlot1;
inline constexpr core::ChunkEncoding kColumnsWithNodesSlot =
    core::ChunkEncoding::kReaderSlot2;

// The chunk encoders (exposed for tests).
std::string EncodeColumnsChunk(absl::Span<const core::AggregateFlow> flows);
std::string EncodeColumnsWithNodesChunk(
    absl::Span<const core::AggregateFlow> flows);

// Appends the protobuf varint of `value` to `out`.
void AppendVarint(uint64_t value, std::string* out);

}  // namespace metasrv::server

#endif  // METASRV_SERVER_CODEC_FLOW_STATE_COLUMNS_H_
