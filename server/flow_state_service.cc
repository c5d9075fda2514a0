#include "server/flow_state_service.h"

#include <grpcpp/impl/codegen/proto_utils.h>

#include "server/flow_state_response.h"
#include "server/grpc_status.h"

namespace metasrv::server {

FlowStateService::FlowStateService(const core::FlowStateManager* flow_state,
                                   const core::Leadership* leadership,
                                   ReadExecutor* reads, WatchHub* watch,
                                   Metrics* metrics)
    : flow_state_(flow_state),
      leadership_(leadership),
      reads_(reads),
      watch_(watch),
      metrics_(metrics) {
  SetMessageAllocatorFor_GetFlowState(&allocator_);
}

grpc::ServerUnaryReactor* FlowStateService::LeaderRead(
    grpc::CallbackServerContext* context, std::function<absl::Status()> read) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  absl::Status leader = core::CheckLeader(*leadership_);
  if (!leader.ok()) {
    reactor->Finish(ToGrpcStatus(leader));
    return reactor;
  }
  reads_->Schedule([reactor, read = std::move(read)] {
    reactor->Finish(ToGrpcStatus(read()));
  });
  return reactor;
}

grpc::ServerUnaryReactor* FlowStateService::GetFlowState(
    grpc::CallbackServerContext* context,
    const metasrv::v1::GetFlowStateRequest* request,
    metasrv::v1::GetFlowStateResponse* response) {
  return LeaderRead(context, [this, request, response] {
    return FillFlowState(
        *flow_state_,
        absl::MakeConstSpan(request->flow_ids().data(), request->flow_ids_size()),
        request->with_nodes(), response);
  });
}

grpc::ServerUnaryReactor* FlowStateService::ListFlownodes(
    grpc::CallbackServerContext* context,
    const metasrv::v1::ListFlownodesRequest* request,
    metasrv::v1::ListFlownodesResponse* response) {
  return LeaderRead(context, [this, request, response] {
    return ListNodes(*request, response);
  });
}

absl::Status FlowStateService::ListNodes(
    const metasrv::v1::ListFlownodesRequest& request,
    metasrv::v1::ListFlownodesResponse* response) const {
  absl::StatusOr<std::vector<core::FlownodeView>> nodes =
      flow_state_->ListFlownodes(
          absl::MakeConstSpan(request.node_ids().data(), request.node_ids_size()));
  if (!nodes.ok()) return nodes.status();
  response->mutable_nodes()->Reserve(static_cast<int>(nodes->size()));
  for (const core::FlownodeView& view : *nodes) {
    metasrv::v1::Flownode* node = response->add_nodes();
    node->set_node_id(view.node_id);
    node->set_peer_addr(view.record.peer_addr);
    node->set_last_heartbeat_ms(view.record.last_heartbeat_ms);
    node->set_last_report_ms(view.record.last_report_ms);
    node->set_flow_count(view.flow_count);
    if (view.record.info.has_value()) {
      const core::NodeInfo& from = *view.record.info;
      greptime::v1::meta::NodeInfo* info = node->mutable_info();
      info->set_version(from.version);
      info->set_git_commit(from.git_commit);
      info->set_start_time_ms(from.start_time_ms);
      info->set_hostname(from.hostname);
      info->set_total_cpu_millicores(from.total_cpu_millicores);
      info->set_total_memory_bytes(from.total_memory_bytes);
      info->set_cpu_usage_millicores(from.cpu_usage_millicores);
      info->set_memory_usage_bytes(from.memory_usage_bytes);
    }
  }
  return absl::OkStatus();
}

grpc::ServerWriteReactor<grpc::ByteBuffer>* FlowStateService::WatchFlowState(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request) {
  absl::Status refused = core::CheckLeader(*leadership_);
  if (refused.ok()) {
    // The request has no fields yet, but must still be one.
    grpc::ByteBuffer copy(*request);
    metasrv::v1::WatchFlowStateRequest parsed;
    if (!grpc::SerializationTraits<metasrv::v1::WatchFlowStateRequest>::Deserialize(
             &copy, &parsed)
             .ok()) {
      refused = absl::InvalidArgumentError("malformed WatchFlowStateRequest");
    }
  }
  if (!refused.ok()) {
    // A reactor that only finishes.
    class Refusal final : public grpc::ServerWriteReactor<grpc::ByteBuffer> {
     public:
      explicit Refusal(const grpc::Status& status) { Finish(status); }
      void OnDone() override { delete this; }
    };
    return new Refusal(ToGrpcStatus(refused));
  }
  (void)context;
  return new WatchStream(watch_, metrics_);
}

}  // namespace metasrv::server
