#include "server/admin_service.h"

#include "server/grpc_status.h"
#include "spdlog/spdlog.h"

namespace metasrv::server {

AdminService::AdminService(LeaderChangeFn leader_change,
                           core::FlowStateManager* flow_state,
                           const core::Leadership* leadership, AdminAuth auth)
    : auth_(std::move(auth)),
      leader_change_(std::move(leader_change)),
      flow_state_(flow_state),
      leadership_(leadership) {}

absl::Status AdminService::Admit(grpc::CallbackServerContext* context,
                                 const char* method) const {
  const auto& metadata = context->client_metadata();
  auto it = metadata.find("authorization");
  absl::string_view authorization;
  if (it != metadata.end()) {
    authorization = absl::string_view(it->second.data(), it->second.size());
  }
  absl::Status allowed = auth_.Check(authorization, context->peer());
  if (!allowed.ok()) {
    spdlog::warn("admin call {} from {} refused: {}", method, context->peer(),
                 std::string(allowed.message()));
    return allowed;
  }
  return core::CheckLeader(*leadership_);
}

grpc::ServerUnaryReactor* AdminService::LeaderChange(
    grpc::CallbackServerContext* context,
    const metasrv::v1::LeaderChangeRequest*,
    metasrv::v1::LeaderChangeResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (absl::Status allowed = Admit(context, "LeaderChange"); !allowed.ok()) {
    reactor->Finish(ToGrpcStatus(allowed));
    return reactor;
  }
  absl::StatusOr<uint64_t> dropped = leader_change_();
  if (!dropped.ok()) {
    reactor->Finish(ToGrpcStatus(dropped.status()));
    return reactor;
  }
  spdlog::info("leader change requested by {}: {} keys dropped",
               context->peer(), *dropped);
  response->set_dropped_keys(*dropped);
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* AdminService::ForgetFlows(
    grpc::CallbackServerContext* context,
    const metasrv::v1::ForgetFlowsRequest* request,
    metasrv::v1::ForgetFlowsResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (absl::Status allowed = Admit(context, "ForgetFlows"); !allowed.ok()) {
    reactor->Finish(ToGrpcStatus(allowed));
    return reactor;
  }
  absl::StatusOr<core::ForgetResult> forgotten = flow_state_->ForgetFlows(
      absl::MakeConstSpan(request->flow_ids().data(), request->flow_ids_size()));
  if (!forgotten.ok()) {
    reactor->Finish(ToGrpcStatus(forgotten.status()));
    return reactor;
  }
  spdlog::info("forget flows requested by {}: {} of {} flows forgotten, {} node "
               "reports rewritten",
               context->peer(), forgotten->forgotten_flows,
               request->flow_ids_size(), forgotten->updated_nodes);
  response->set_forgotten_flows(forgotten->forgotten_flows);
  response->set_updated_nodes(forgotten->updated_nodes);
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace metasrv::server
