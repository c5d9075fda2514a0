// The greptime.v1.meta.Heartbeat service.
#ifndef METASRV_SERVER_SERVICES_HEARTBEAT_SERVICE_H_
#define METASRV_SERVER_SERVICES_HEARTBEAT_SERVICE_H_

#include <cstddef>

#include "core/leadership.h"
#include "greptime/v1/meta/heartbeat.grpc.pb.h"
#include "server/ops/call_metrics.h"
#include "server/rpc/call_gate.h"
#include "server/rpc/stream_registry.h"
#include "server/rpc/unary_call.h"
#include "server/services/heartbeat_handler.h"

namespace metasrv::server {

// Both methods take raw bytes, so that zstd-compressed requests can be
// decoded (see request_decoder.h): the Heartbeat stream is parsed by
// HeartbeatStream, AskLeader by UnaryCall.
class HeartbeatService final
    : public greptime::v1::meta::Heartbeat::WithRawCallbackMethod_Heartbeat<
          greptime::v1::meta::Heartbeat::WithRawCallbackMethod_AskLeader<
              greptime::v1::meta::Heartbeat::Service>> {
 public:
  // Borrows all three; they must outlive the service. Requests inflate to at
  // most `limits.max_request_bytes`.
  // Every stream is counted in `series` (null: not counted).
  HeartbeatService(HeartbeatHandler* handler, StreamRegistry* registry,
                   const CallGate* gate, CallLimits limits,
                   CallSeries* series = nullptr);

  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* Heartbeat(
      grpc::CallbackServerContext* context) override;

  grpc::ServerUnaryReactor* AskLeader(grpc::CallbackServerContext* context,
                                      const grpc::ByteBuffer* request,
                                      grpc::ByteBuffer* response) override;

 private:
  HeartbeatHandler* const handler_;  // Per-request logic.
  StreamRegistry* const registry_;   // Open streams.
  const CallGate* const gate_;       // Who may call; who leads.
  const CallLimits limits_;          // Request size, reply budget.
  CallSeries* const series_;         // The streams' call metrics; or null.
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_SERVICES_HEARTBEAT_SERVICE_H_
