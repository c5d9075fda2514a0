#include "server/services/heartbeat_service.h"

#include "server/rpc/unary_call.h"
#include "server/services/heartbeat_stream.h"

namespace metasrv::server {

using greptime::v1::meta::AskLeaderRequest;
using greptime::v1::meta::AskLeaderResponse;

HeartbeatService::HeartbeatService(HeartbeatHandler* handler,
                                   StreamRegistry* registry,
                                   const core::Leadership* leadership,
                                   CallLimits limits)
    : handler_(handler),
      registry_(registry),
      leadership_(leadership),
      limits_(limits) {}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>*
HeartbeatService::Heartbeat(grpc::CallbackServerContext* context) {
  return new HeartbeatStream(handler_, registry_, limits_.max_request_bytes,
                             context->peer());
}

grpc::ServerUnaryReactor* HeartbeatService::AskLeader(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
    grpc::ByteBuffer* response) {
  grpc::ServerUnaryReactor* reactor = nullptr;
  auto* call = UnaryCall<AskLeaderRequest, AskLeaderResponse>::Start(
      context, request, response, limits_, &reactor);
  if (call == nullptr) return reactor;
  // Any replica answers, leader or not: that is how clients find the leader.
  AskLeaderResponse* answer = call->response();
  answer->mutable_header()->set_protocol_version(1);
  answer->mutable_leader()->set_id(0);
  answer->mutable_leader()->set_addr(leadership_->LeaderAddr());
  call->Finish(absl::OkStatus());
  return reactor;
}

}  // namespace metasrv::server
