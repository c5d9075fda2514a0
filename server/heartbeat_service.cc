#include "server/heartbeat_service.h"

#include "server/heartbeat_stream.h"

namespace metasrv::server {

using greptime::v1::meta::AskLeaderRequest;
using greptime::v1::meta::AskLeaderResponse;

HeartbeatService::HeartbeatService(HeartbeatHandler* handler,
                                   StreamRegistry* registry,
                                   const core::Leadership* leadership)
    : handler_(handler), registry_(registry), leadership_(leadership) {}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>*
HeartbeatService::Heartbeat(grpc::CallbackServerContext*) {
  return new HeartbeatStream(handler_, registry_);
}

grpc::ServerUnaryReactor* HeartbeatService::AskLeader(
    grpc::CallbackServerContext* context, const AskLeaderRequest*,
    AskLeaderResponse* response) {
  response->mutable_header()->set_protocol_version(1);
  response->mutable_leader()->set_id(0);
  response->mutable_leader()->set_addr(leadership_->LeaderAddr());
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace metasrv::server
