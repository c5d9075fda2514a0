#include "server/services/heartbeat_service.h"

#include "server/rpc/call_gate.h"
#include "server/services/heartbeat_stream.h"

namespace metasrv::server {

using greptime::v1::meta::AskLeaderRequest;
using greptime::v1::meta::AskLeaderResponse;

HeartbeatService::HeartbeatService(HeartbeatHandler* handler,
                                   StreamRegistry* registry,
                                   const CallGate* gate, CallLimits limits,
                                   CallSeries* series)
    : handler_(handler),
      registry_(registry),
      gate_(gate),
      limits_(limits),
      series_(series) {}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>*
HeartbeatService::Heartbeat(grpc::CallbackServerContext* context) {
  return new HeartbeatStream(handler_, registry_, limits_.max_request_bytes,
                             context, series_);
}

grpc::ServerUnaryReactor* HeartbeatService::AskLeader(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
    grpc::ByteBuffer* response) {
  grpc::ServerUnaryReactor* reactor = nullptr;
  Admission admission = Admission::kServe;  // kAnywhere: the only one.
  auto* call = StartAdmitted<AskLeaderRequest, AskLeaderResponse>(
      *gate_, Method::kAskLeader, context, request, response, limits_, &reactor,
      &admission);
  if (call == nullptr) return reactor;
  // Any replica answers, leader or not: that is how clients find the leader.
  // With none known, an error, as upstream's handle_ask_leader answers when
  // its election has no leader (src/meta-srv/src/service/heartbeat.rs): an
  // empty address would be taken for the leader's. Upstream's is its
  // election's NoLeader error, of status code Internal (retryable; gRPC
  // INTERNAL): the same here, code for code.
  std::string leader = gate_->leadership().LeaderAddr();
  if (leader.empty()) {
    call->Finish(absl::InternalError(
        "no metasrv leader is known yet (an election is in progress); ask "
        "again"));
    return reactor;
  }
  AskLeaderResponse* answer = call->response();
  answer->mutable_header()->set_protocol_version(1);
  answer->mutable_leader()->set_id(0);
  answer->mutable_leader()->set_addr(std::move(leader));
  call->Finish(absl::OkStatus());
  return reactor;
}

}  // namespace metasrv::server
