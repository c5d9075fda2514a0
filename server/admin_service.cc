#include "server/admin_service.h"

#include "server/grpc_status.h"
#include "spdlog/spdlog.h"

namespace metasrv::server {

AdminService::AdminService(LeaderChangeFn leader_change,
                           const core::Leadership* leadership, AdminAuth auth)
    : auth_(std::move(auth)),
      leader_change_(std::move(leader_change)),
      leadership_(leadership) {}

absl::Status AdminService::Authorize(grpc::CallbackServerContext* context,
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
  }
  return allowed;
}

grpc::ServerUnaryReactor* AdminService::LeaderChange(
    grpc::CallbackServerContext* context,
    const metasrv::v1::LeaderChangeRequest*,
    metasrv::v1::LeaderChangeResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (absl::Status allowed = Authorize(context, "LeaderChange"); !allowed.ok()) {
    reactor->Finish(ToGrpcStatus(allowed));
    return reactor;
  }
  absl::Status leader = core::CheckLeader(*leadership_);
  if (!leader.ok()) {
    reactor->Finish(ToGrpcStatus(leader));
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

}  // namespace metasrv::server
