#include "server/flow_state_service.h"

#include "server/grpc_status.h"

namespace metasrv::server {

FlowStateService::FlowStateService(const core::FlowStateManager* flow_state,
                                   const core::Leadership* leadership)
    : flow_state_(flow_state), leadership_(leadership) {}

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
  auto read = flow_state_->Read(
      absl::MakeConstSpan(request->flow_ids().data(), request->flow_ids_size()));
  if (!read.ok()) {
    reactor->Finish(ToGrpcStatus(read.status()));
    return reactor;
  }
  response->set_found(read->has_value());
  if (read->has_value()) {
    response->mutable_flows()->Reserve(static_cast<int>((*read)->size()));
    for (const core::AggregateFlow& flow : **read) {
      metasrv::v1::FlowStateEntry* out = response->add_flows();
      out->set_flow_id(flow.stat.flow_id);
      if (flow.stat.has(core::kStateSize)) out->set_state_size(flow.stat.state_size);
      if (flow.stat.has(core::kLastExecTime)) {
        out->set_last_exec_time_ms(flow.stat.last_exec_time);
      }
      if (flow.stat.has(core::kStartTime)) out->set_start_time_ms(flow.stat.start_time);
    }
  }
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace metasrv::server
