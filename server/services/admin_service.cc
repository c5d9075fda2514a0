#include "server/services/admin_service.h"

#include "server/rpc/unary_call.h"
#include "spdlog/spdlog.h"

namespace metasrv::server {

AdminService::AdminService(LeaderChangeFn leader_change,
                           core::FlowStateManager* flow_state,
                           const CallGate* gate, CallLimits limits)
    : leader_change_(std::move(leader_change)),
      flow_state_(flow_state),
      gate_(gate),
      limits_(limits) {}

template <typename Request, typename Response, typename Handle>
grpc::ServerUnaryReactor* AdminService::Serve(
    Method method, grpc::CallbackServerContext* context,
    const grpc::ByteBuffer* request, grpc::ByteBuffer* response,
    Handle handle) const {
  grpc::ServerUnaryReactor* reactor = nullptr;
  Admission admission = Admission::kServe;  // The only one, for our API.
  auto* call =
      StartAdmitted<Request, Response>(*gate_, method, context, request,
                                       response, limits_, &reactor, &admission);
  if (call != nullptr) call->Finish(handle(call->request(), call->response()));
  return reactor;
}

grpc::ServerUnaryReactor* AdminService::LeaderChange(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
    grpc::ByteBuffer* response) {
  return Serve<metasrv::v1::LeaderChangeRequest,
               metasrv::v1::LeaderChangeResponse>(
      Method::kLeaderChange, context, request, response,
      [this, context](const metasrv::v1::LeaderChangeRequest&,
                      metasrv::v1::LeaderChangeResponse* resp) {
        absl::StatusOr<uint64_t> dropped = leader_change_();
        if (!dropped.ok()) return dropped.status();
        spdlog::info("leader change requested by {}: {} keys dropped",
                     context->peer(), *dropped);
        resp->set_dropped_keys(*dropped);
        return absl::OkStatus();
      });
}

grpc::ServerUnaryReactor* AdminService::ForgetFlows(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
    grpc::ByteBuffer* response) {
  return Serve<metasrv::v1::ForgetFlowsRequest,
               metasrv::v1::ForgetFlowsResponse>(
      Method::kForgetFlows, context, request, response,
      [this, context](const metasrv::v1::ForgetFlowsRequest& req,
                      metasrv::v1::ForgetFlowsResponse* resp) {
        const auto& ids = req.flow_ids();
        absl::StatusOr<core::ForgetResult> forgotten = flow_state_->ForgetFlows(
            absl::MakeConstSpan(ids.data(), ids.size()));
        if (!forgotten.ok()) return forgotten.status();
        spdlog::info(
            "forget flows requested by {}: {} of {} flows forgotten, {} "
            "node reports rewritten",
            context->peer(), forgotten->forgotten_flows, ids.size(),
            forgotten->updated_nodes);
        resp->set_forgotten_flows(forgotten->forgotten_flows);
        resp->set_updated_nodes(forgotten->updated_nodes);
        return absl::OkStatus();
      });
}

grpc::ServerUnaryReactor* AdminService::ForgetNodes(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
    grpc::ByteBuffer* response) {
  return Serve<metasrv::v1::ForgetNodesRequest,
               metasrv::v1::ForgetNodesResponse>(
      Method::kForgetNodes, context, request, response,
      [this, context](const metasrv::v1::ForgetNodesRequest& req,
                      metasrv::v1::ForgetNodesResponse* resp) {
        const auto& ids = req.node_ids();
        absl::StatusOr<uint64_t> forgotten = flow_state_->ForgetNodes(
            absl::MakeConstSpan(ids.data(), ids.size()));
        if (!forgotten.ok()) return forgotten.status();
        spdlog::info("forget nodes requested by {}: {} of {} nodes forgotten",
                     context->peer(), *forgotten, ids.size());
        resp->set_forgotten_nodes(*forgotten);
        return absl::OkStatus();
      });
}

}  // namespace metasrv::server
