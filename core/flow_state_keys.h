// The KV key layout of flow state.
#ifndef METASRV_CORE_FLOW_STATE_KEYS_H_
#define METASRV_CORE_FLOW_STATE_KEYS_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace metasrv::core {

// The aggregate over all nodes.
inline constexpr absl::string_view kFlowStateKey = "__flow/state";
// Prefix of the per-node keys.
inline constexpr absl::string_view kFlowStateNodePrefix = "__flow/state/node/";

// Prefix of the flownode records (see flownode_record.h). Outside `__flow/`,
// which GreptimeDB's own metadata uses.

// `__flow/state/node/{node_id}`, node_id in decimal.
std::string FlowStateNodeKey(uint64_t node_id);

// The node id of a per-node key, or nullopt if `key` is not one (wrong prefix,
// not a canonical decimal uint64).
std::optional<uint64_t> ParseFlowStateNodeKey(absl::string_view key);


}  // namespace metasrv::core

#endif  // METASRV_CORE_FLOW_STATE_KEYS_H_
