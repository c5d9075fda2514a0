// Builds GetFlowState's columnar answer from the flow-state core. Shared by
// GetFlowState and WatchFlowState.
#ifndef METASRV_SERVER_CODEC_FLOW_STATE_RESPONSE_H_
#define METASRV_SERVER_CODEC_FLOW_STATE_RESPONSE_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "core/flow_state_manager.h"
#include "metasrv/v1/metasrv.pb.h"

namespace metasrv::server {

// Fills `response` (empty on entry) with the aggregate's flows, all or those
// of `flow_ids` that exist, and with `with_nodes` the node columns. An error
// only if the KV fails.
absl::Status FillFlowState(const core::FlowStateManager& flow_state,
                           absl::Span<const uint32_t> flow_ids, bool with_nodes,
                           metasrv::v1::GetFlowStateResponse* response);

}  // namespace metasrv::server

#endif  // METASRV_SERVER_CODEC_FLOW_STATE_RESPONSE_H_
