#include "server/services/admin_service.h"

#include "server/rpc/grpc_status.h"
#include "server/ops/log_limit.h"
#include "server/rpc/unary_call.h"
#include "spdlog/spdlog.h"

namespace metasrv::server {

AdminService::AdminService(LeaderChangeFn leader_change,
                           core::FlowStateManager* flow_state,
                           const core::Leadership* leadership, AdminAuth auth,
                           CallLimits limits)
    : auth_(std::move(auth)),
      leader_change_(std::move(leader_change)),
      flow_state_(flow_state),
      leadership_(leadership),
      limits_(limits) {}

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
    LogLimited(spdlog::level::warn, "admin_call_refused",
               "admin call {} from {} refused: {}", method, context->peer(),
               std::string(allowed.message()));
    return allowed;
  }
  return core::CheckLeader(*leadership_);
}

template <typename Request, typename Response, typename Handle>
grpc::ServerUnaryReactor* AdminService::Serve(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
    grpc::ByteBuffer* response, const char* method, Handle handle) const {
  grpc::ServerUnaryReactor* reactor = nullptr;
  auto* call = UnaryCall<Request, Response>::Start(context, request, response,
                                                   limits_, &reactor);
  if (call == nullptr) return reactor;
  absl::Status done = Admit(context, method);
  if (done.ok()) done = handle(call->request(), call->response());
  call->Finish(done);
  return reactor;
}

grpc::ServerUnaryReactor* AdminService::LeaderChange(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
    grpc::ByteBuffer* response) {
  return Serve<metasrv::v1::LeaderChangeRequest,
               metasrv::v1::LeaderChangeResponse>(
      context, request, response, "LeaderChange",
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
      context, request, response, "ForgetFlows",
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

}  // namespace metasrv::server
