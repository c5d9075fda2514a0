// The JSON codec of flow-state values, byte-identical to GreptimeDB's: one
// object of one map per field of core/flow_fields.h (its json_key), in the
// table's order, each from decimal flow id to value:
//
//   {"state_size":{"1":1024},<the next field's map>,...}
//
// Compact, inner keys decimal flow ids in ascending numeric order.
#ifndef METASRV_CORE_FLOW_STATE_CODEC_H_
#define METASRV_CORE_FLOW_STATE_CODEC_H_

#include <array>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/flow_state_value.h"

namespace metasrv::core {

// Encodes `value`. Never fails.
std::string EncodeFlowState(const FlowStateValue& value);

// Decodes a value. Accepts a value without a map its field does not require
// (json_required false: an older writer's; it is then empty). Rejects, with
// kInvalidArgument naming the problem and its byte offset: anything that is
// not exactly one JSON object of the known maps (unknown or repeated
// top-level fields, a required map missing, trailing bytes), flow ids that
// are not canonical decimal numbers in [0, 2^32-1], a flow id repeated
// within one map, values that are not integers, negative values of uint64
// fields, and integers beyond their field's type. Reads only within `json`.
absl::StatusOr<FlowStateValue> DecodeFlowState(absl::string_view json);

// The encoded members of each map for some run of flows, without braces:
// `"1":1024,"2":2048`, one per field in the table's order. Used to encode a
// large value piece by piece.
struct FlowStateJsonParts {
  std::array<std::string, kFlowFieldCount> maps;
};

// Appends the members of `stat` to `parts`. Calls must come in ascending flow
// id order, across all parts later assembled together.
void AppendFlowStateParts(const FlowStat& stat, FlowStateJsonParts* parts);

// Joins parts (in order) into one value.
std::string AssembleFlowState(
    absl::Span<const FlowStateJsonParts* const> parts);

// `parts` as one string: the maps' members joined with '\0', which no member
// contains. How a chunk of a large value is cached.
std::string JoinFlowStateParts(const FlowStateJsonParts& parts);

// Joins chunks made by JoinFlowStateParts (in order) into one value: the same
// bytes as AssembleFlowState() of their parts.
std::string AssembleFlowStateChunks(absl::Span<const absl::string_view> chunks);

}  // namespace metasrv::core

#endif  // METASRV_CORE_FLOW_STATE_CODEC_H_
