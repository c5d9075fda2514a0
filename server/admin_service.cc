#include "server/admin_service.h"

#include "server/grpc_status.h"
#include "spdlog/spdlog.h"

namespace metasrv::server {

AdminService::AdminService(LeaderChangeFn leader_change,
                           const core::Leadership* leadership)
    : leader_change_(std::move(leader_change)), leadership_(leadership) {}

grpc::ServerUnaryReactor* AdminService::LeaderChange(
    grpc::CallbackServerContext* context,
    const metasrv::v1::LeaderChangeRequest*,
    metasrv::v1::LeaderChangeResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
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
