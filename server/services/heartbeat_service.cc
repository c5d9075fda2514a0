#include "server/services/heartbeat_service.h"

#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/services/heartbeat_stream.h"

namespace metasrv::server {

using greptime::v1::meta::AskLeaderRequest;
using greptime::v1::meta::AskLeaderResponse;

HeartbeatService::HeartbeatService(HeartbeatHandler* handler,
                                   const core::Leadership* leadership,
                                   std::function<std::string()> no_leader_reason)
    : handler_(handler),
      leadership_(leadership),
      no_leader_reason_(std::move(no_leader_reason)) {}

void HeartbeatService::Register(CallDispatcher* dispatcher) {
  dispatcher->Add(Method::kHeartbeat,
                  HeartbeatCall::Factory(
                      [this]() -> std::unique_ptr<HeartbeatCall::Handler> {
                        return std::make_unique<HeartbeatStream>(handler_);
                      },
                      [this] {
                        return std::make_unique<DecodedHeartbeat>(
                            handler_->max_flows_per_report());
                      }));
  dispatcher->Add(Method::kAskLeader,
                  AskLeaderCall::Factory([this](AskLeaderCall* call) {
                    AskLeader(call);
                  }));
}

void HeartbeatService::AskLeader(AskLeaderCall* call) {
  // kAnywhere: admitted on any replica.
  // Any replica answers, leader or not: that is how clients find the leader.
  // With none known, an error, as upstream's handle_ask_leader answers when
  // its election has no leader (src/meta-srv/src/service/heartbeat.rs): an
  // empty address would be taken for the leader's. Upstream's is its
  // election's NoLeader error, of status code Internal (retryable; gRPC
  // INTERNAL): the same here, code for code. Clients see it masked
  // ("Internal error: 1003"); the log says why.
  std::string leader = leadership_->LeaderAddr();
  if (leader.empty()) {
    call->Finish(absl::InternalError(absl::StrCat(
        "no metasrv leader is known: ", no_leader_reason_(), "; ask again")));
    return;
  }
  AskLeaderResponse* answer = call->response();
  answer->mutable_header()->set_protocol_version(1);
  answer->mutable_leader()->set_id(0);
  answer->mutable_leader()->set_addr(std::move(leader));
  call->Finish(absl::OkStatus());
}

}  // namespace metasrv::server
