// The greptime.v1.meta.Heartbeat service.
#ifndef METASRV_SERVER_HEARTBEAT_SERVICE_H_
#define METASRV_SERVER_HEARTBEAT_SERVICE_H_

#include "core/leadership.h"
#include "greptime/v1/meta/heartbeat.grpc.pb.h"
#include "server/heartbeat_handler.h"
#include "server/stream_registry.h"

namespace metasrv::server {

// The Heartbeat stream is a raw (bytes) method, parsed by HeartbeatStream;
// AskLeader is an ordinary callback method.
class HeartbeatService final
    : public greptime::v1::meta::Heartbeat::WithRawCallbackMethod_Heartbeat<
          greptime::v1::meta::Heartbeat::WithCallbackMethod_AskLeader<
              greptime::v1::meta::Heartbeat::Service>> {
 public:
  // Borrows all three; they must outlive the service.
  HeartbeatService(HeartbeatHandler* handler, StreamRegistry* registry,
                   const core::Leadership* leadership);

  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* Heartbeat(
      grpc::CallbackServerContext* context) override;

  grpc::ServerUnaryReactor* AskLeader(
      grpc::CallbackServerContext* context,
      const greptime::v1::meta::AskLeaderRequest* request,
      greptime::v1::meta::AskLeaderResponse* response) override;

 private:
  HeartbeatHandler* const handler_;           // Per-request logic.
  StreamRegistry* const registry_;            // Open streams.
  const core::Leadership* const leadership_;  // Who leads.
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_HEARTBEAT_SERVICE_H_
