#include "server/codec/flow_state_response.h"

namespace metasrv::server {

absl::Status FillFlowState(const core::FlowStateManager& flow_state,
                           absl::Span<const uint32_t> flow_ids, bool with_nodes,
                           metasrv::v1::GetFlowStateResponse* response) {
  const int expected = static_cast<int>(
      flow_ids.empty() ? flow_state.flow_count() : flow_ids.size());
  response->mutable_flow_ids()->Reserve(expected);
  response->mutable_fields()->Reserve(expected);
  response->mutable_state_sizes()->Reserve(expected);
  response->mutable_last_exec_times_ms()->Reserve(expected);
  response->mutable_start_times_ms()->Reserve(expected);
  if (with_nodes) {
    response->mutable_state_size_nodes()->Reserve(expected);
    response->mutable_last_exec_time_nodes()->Reserve(expected);
    response->mutable_start_time_nodes()->Reserve(expected);
  }
  const bool found = flow_state.Visit(
      flow_ids,
      [response, with_nodes](absl::Span<const core::AggregateFlow> flows) {
        for (const core::AggregateFlow& flow : flows) {
          response->add_flow_ids(flow.stat.flow_id);
          response->add_fields(flow.stat.fields);
          response->add_state_sizes(flow.stat.state_size);
          response->add_last_exec_times_ms(flow.stat.last_exec_time);
          response->add_start_times_ms(flow.stat.start_time);
          if (with_nodes) {
            response->add_state_size_nodes(flow.state_size_node);
            response->add_last_exec_time_nodes(flow.last_exec_time_node);
            response->add_start_time_nodes(flow.start_time_node);
          }
        }
      });
  response->set_found(found);
  return absl::OkStatus();
}

}  // namespace metasrv::server
