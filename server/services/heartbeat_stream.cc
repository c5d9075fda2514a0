#include "server/services/heartbeat_stream.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "server/ops/log_limit.h"
#include "server/ops/logging.h"
#include "spdlog/spdlog.h"

namespace metasrv::server {

HeartbeatStream::HeartbeatStream(HeartbeatHandler* handler)
    : handler_(handler) {}

absl::Status HeartbeatStream::OnOpen(HeartbeatCall* call) {
  call_ = call;
  return absl::OkStatus();
}

StreamStep HeartbeatStream::OnRequest(
    DecodedHeartbeat* request, const Admission& admission,
    greptime::v1::meta::HeartbeatResponse* answer) {
  const std::string& peer = call_->peer();
  const bool first = handshake_;
  const bool flownode = request->parsed.role == greptime::v1::meta::FLOWNODE;
  if (first && flownode) flownode_ = request->parsed.node_id;
  static const std::string kNoHost;
  const CallLedger::Ticket* ticket = call_->ticket();
  absl::Status handled =
      handler_->Handle(std::move(request->parsed), handshake_, admission,
                       answer, ticket != nullptr ? ticket->host_key() : kNoHost);
  handshake_ = false;
  if (answer->has_heartbeat_config()) {
    // What the node was told is what its silence is measured against: a
    // frontend, told six intervals, is not cut at a flownode's limit.
    const auto& told = answer->heartbeat_config();
    call_->Told(absl::Milliseconds(told.heartbeat_interval_ms()),
                absl::Milliseconds(told.retry_interval_ms()));
  }
  if (first && flownode_.has_value() && flownode) {
    // Logged once handled: a follower's refusal is a refusal, not a
    // connection. Bounded: 10,000 flownodes reconnecting after a failover
    // are one line per interval, the rest counted
    // (metasrv_log_lines_suppressed_total).
    const std::string node = absl::StrCat(*flownode_);
    const LogFields fields(
        {{"node_id", node}, {"peer", peer}, {"role", "flownode"}});
    if (absl::IsAborted(handled)) {
      LogLimited(spdlog::level::info, "flownode_refused", node,
                 "flownode {} from {} refused: this replica does not lead",
                 *flownode_, peer);
    } else if (handled.ok()) {
      LogLimited(spdlog::level::info, "flownode_connected", node,
                 "flownode {} connected from {}", *flownode_, peer);
    }
  }
  if (absl::IsAborted(handled)) {
    // Not leader: the answer says so, then the stream ends with ABORTED and
    // no GreptimeDB metadata, as upstream's does (its client so reads it as
    // not retryable and asks for the leader).
    return StreamStep::AnswerThenEnd(handled);
  }
  if (!handled.ok()) {
    spdlog::debug("heartbeat stream from {} ended: {}", peer,
                  handled.ToString());
    return StreamStep::End(handled);
  }
  return StreamStep::Answer();
}

void HeartbeatStream::OnClose() {
  if (flownode_.has_value()) {
    const LogFields fields({{"node_id", absl::StrCat(*flownode_)},
                            {"peer", call_->peer()},
                            {"role", "flownode"}});
    LogLimited(spdlog::level::info, "flownode_disconnected",
               absl::StrCat(*flownode_), "flownode {} (from {}) disconnected",
               *flownode_, call_->peer());
  }
}

}  // namespace metasrv::server
