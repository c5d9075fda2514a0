#include "server/flow_state_service.h"

#include "server/grpc_status.h"

namespace metasrv::server {

FlowStateService::FlowStateService(const core::FlowStateManager* flow_state,
                                   const core::Leadership* leadership,
                                   ReadExecutor* reads)
    : flow_state_(flow_state), leadership_(leadership), reads_(reads) {
  SetMessageAllocatorFor_GetFlowState(&allocator_);
}

grpc::ServerUnaryReactor* FlowStateService::GetFlowState(
    grpc::CallbackServerContext* context,
    const metasrv::v1::GetFlowStateRequest* request,
    metasrv::v1::GetFlowStateResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  absl::Status leader = core::CheckLeader(*leadership_);
  if (!leader.ok()) {
    reactor->Finish(ToGrpcStatus(leader));
    return reactor;
  }
  reads_->Schedule([this, request, response, reactor] {
    reactor->Finish(Fill(*request, response));
  });
  return reactor;
}

grpc::Status FlowStateService::Fill(const metasrv::v1::GetFlowStateRequest& request,
                                    metasrv::v1::GetFlowStateResponse* response) const {
  const uint64_t expected = request.flow_ids_size() == 0
                                ? flow_state_->flow_count()
                                : static_cast<uint64_t>(request.flow_ids_size());
  response->mutable_flow_ids()->Reserve(static_cast<int>(expected));
  response->mutable_fields()->Reserve(static_cast<int>(expected));
  response->mutable_state_sizes()->Reserve(static_cast<int>(expected));
  response->mutable_last_exec_times_ms()->Reserve(static_cast<int>(expected));
  response->mutable_start_times_ms()->Reserve(static_cast<int>(expected));
  absl::StatusOr<bool> found = flow_state_->Visit(
      absl::MakeConstSpan(request.flow_ids().data(), request.flow_ids_size()),
      [response](absl::Span<const core::AggregateFlow> flows) {
        for (const core::AggregateFlow& flow : flows) {
          response->add_flow_ids(flow.stat.flow_id);
          response->add_fields(flow.stat.fields);
          response->add_state_sizes(flow.stat.state_size);
          response->add_last_exec_times_ms(flow.stat.last_exec_time);
          response->add_start_times_ms(flow.stat.start_time);
        }
      });
  if (!found.ok()) return ToGrpcStatus(found.status());
  response->set_found(*found);
  return grpc::Status::OK;
}


}  // namespace metasrv::server
