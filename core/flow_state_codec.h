// The JSON codec of flow-state values, byte-identical to GreptimeDB's:
//
//   {"state_size":{"1":1024},"last_exec_time_map":{"1":100},"start_time_map":{}}
//
// Compact, fields in this order, inner keys decimal flow ids in ascending
// numeric order.
#ifndef METASRV_CORE_FLOW_STATE_CODEC_H_
#define METASRV_CORE_FLOW_STATE_CODEC_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/flow_state_value.h"

namespace metasrv::core {

// Encodes `value`. Never fails.
std::string EncodeFlowState(const FlowStateValue& value);

// Decodes a value. Accepts the legacy value without "start_time_map" (it is
// then empty). Rejects, with kInvalidArgument naming the problem and its byte
// offset: anything that is not exactly one JSON object of the three known maps
// (unknown or repeated top-level fields, missing "state_size" or
// "last_exec_time_map", trailing bytes), flow ids that are not canonical
// decimal numbers in [0, 2^32-1], a flow id repeated within one map, values
// that are not integers, negative state sizes, and integers beyond 64 bits
// (state sizes beyond uint64, times beyond int64). Reads only within `json`.
absl::StatusOr<FlowStateValue> DecodeFlowState(absl::string_view json);

// The encoded members of each of the three maps for some run of flows, without
// braces: `"1":1024,"2":2048`. Used to encode a large value piece by piece.
struct FlowStateJsonParts {
  std::string state_size;      // Members of "state_size".
  std::string last_exec_time;  // Members of "last_exec_time_map".
  std::string start_time;      // Members of "start_time_map".
};

// Appends the members of `stat` to `parts`. Calls must come in ascending flow
// id order, across all parts later assembled together.
void AppendFlowStateParts(const FlowStat& stat, FlowStateJsonParts* parts);

// Joins parts (in order) into one value.
std::string AssembleFlowState(
    absl::Span<const FlowStateJsonParts* const> parts);

// `parts` as one string: the three members joined with '\0', which no member
// contains. How a chunk of a large value is cached.
std::string JoinFlowStateParts(const FlowStateJsonParts& parts);

// Joins chunks made by JoinFlowStateParts (in order) into one value: the same
// bytes as AssembleFlowState() of their parts.
std::string AssembleFlowStateChunks(absl::Span<const absl::string_view> chunks);

}  // namespace metasrv::core

#endif  // METASRV_CORE_FLOW_STATE_CODEC_H_
