// One Heartbeat stream's logic, over the runtime's StreamCall shape (which
// owns the call protocol: each request decoded by the heartbeat's codec and
// admitted, the reply charge, the status once, the end at a step-down):
// handle each request, and log the flownode's connection and disconnection.
//
// A request that does not parse ends the stream with INVALID_ARGUMENT (the
// shape's decode); a follower answers GreptimeDB's not-leader header and
// ends with ABORTED.
#ifndef METASRV_SERVER_SERVICES_HEARTBEAT_STREAM_H_
#define METASRV_SERVER_SERVICES_HEARTBEAT_STREAM_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "greptime/v1/meta/heartbeat.pb.h"
#include "server/codec/heartbeat_request.h"
#include "server/rpc/stream_call.h"
#include "server/services/heartbeat_handler.h"

namespace metasrv::server {

using HeartbeatCall =
    StreamCall<DecodedHeartbeat, greptime::v1::meta::HeartbeatResponse>;

class HeartbeatStream final : public HeartbeatCall::Handler {
 public:
  // Borrows `handler`.
  explicit HeartbeatStream(HeartbeatHandler* handler);

  absl::Status OnOpen(HeartbeatCall* call) override;
  StreamStep OnRequest(DecodedHeartbeat* request, const Admission& admission,
                       greptime::v1::meta::HeartbeatResponse* answer) override;
  void OnClose() override;

 private:
  HeartbeatHandler* const handler_;  // Handles each request; borrowed.
  HeartbeatCall* call_ = nullptr;    // Its call, once open.
  bool handshake_ = true;            // The next request is the first.
  // The flownode this stream is of, once its first request said so; for
  // the connect and disconnect lines.
  std::optional<uint64_t> flownode_;
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_SERVICES_HEARTBEAT_STREAM_H_
