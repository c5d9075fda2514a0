// The greptime.v1.meta.Heartbeat service.
#ifndef METASRV_SERVER_SERVICES_HEARTBEAT_SERVICE_H_
#define METASRV_SERVER_SERVICES_HEARTBEAT_SERVICE_H_

#include <cstddef>
#include <functional>
#include <string>

#include "core/leadership.h"
#include "greptime/v1/meta/heartbeat.pb.h"
#include "server/rpc/call_dispatcher.h"
#include "server/rpc/method_table.h"
#include "server/rpc/unary_call.h"
#include "server/services/heartbeat_handler.h"

namespace metasrv::server {

// Both methods take raw bytes, so that zstd-compressed requests can be
// decoded (see request_decoding.h): the Heartbeat stream is parsed by
// HeartbeatStream, AskLeader by UnaryCall.
class HeartbeatService final {
 public:
  // Borrows both; they must outlive the service. `no_leader_reason` says
  // why no leader is known (NoLeaderReason), for the log of a refused
  // AskLeader.
  HeartbeatService(HeartbeatHandler* handler,
                   const core::Leadership* leadership,
                   std::function<std::string()> no_leader_reason);

  // Serves the service's methods through `dispatcher`.
  void Register(CallDispatcher* dispatcher);

 private:
  using AskLeaderCall = UnaryCall<greptime::v1::meta::AskLeaderRequest,
                                  greptime::v1::meta::AskLeaderResponse>;
  void AskLeader(AskLeaderCall* call);

  HeartbeatHandler* const handler_;           // Per-request logic.
  const core::Leadership* const leadership_;  // Who leads; borrowed.
  const std::function<std::string()> no_leader_reason_;  // For the log.
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_SERVICES_HEARTBEAT_SERVICE_H_
