#include "server/services/heartbeat_stream.h"

#include <grpc/byte_buffer.h>
#include <grpc/slice.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "server/ops/log_limit.h"
#include "server/ops/logging.h"
#include "server/rpc/grpc_status.h"
#include "server/rpc/peer_ledger.h"
#include "spdlog/spdlog.h"

namespace metasrv::server {
namespace {

// `response` as one slice in a core byte buffer (owned by the caller).
grpc_byte_buffer* Serialize(
    const greptime::v1::meta::HeartbeatResponse& response) {
  const size_t size = response.ByteSizeLong();
  grpc_slice slice = grpc_slice_malloc(size);
  response.SerializeWithCachedSizesToArray(GRPC_SLICE_START_PTR(slice));
  grpc_byte_buffer* buffer = grpc_raw_byte_buffer_create(&slice, 1);
  grpc_slice_unref(slice);
  return buffer;
}

}  // namespace

HeartbeatStream::HeartbeatStream(ServerCall* call, HeartbeatHandler* handler,
                                 StreamRegistry* registry,
                                 size_t max_request_bytes)
    : call_(call),
      handler_(handler),
      registry_(registry),
      max_request_bytes_(max_request_bytes),
      peer_(call->context()->peer()),
      batch_(this, &HeartbeatStream::OnBatch),
      metadata_(this, &HeartbeatStream::OnSent),
      finished_(this, &HeartbeatStream::OnSent) {}

HeartbeatStream::~HeartbeatStream() {
  // Both were handed back: every batch completed before this is deleted.
  if (received_ != nullptr) grpc_byte_buffer_destroy(received_);
  absl::MutexLock lock(&mu_);
  if (sent_ != nullptr) grpc_byte_buffer_destroy(sent_);
}

void HeartbeatStream::Start() {
  absl::Status added = registry_->Add(this);
  if (!added.ok()) {
    LogLimited(spdlog::level::warn, "heartbeat_stream_refused",
               PeerLedger::HostOf(peer_),
               "heartbeat stream from {} refused: {}", peer_, added.ToString());
    FinishOnce(added);
    return;
  }
  registered_ = true;
  absl::MutexLock lock(&mu_);
  if (!finished_started_) StartBatch(nullptr);
}

void HeartbeatStream::StartBatch(grpc_byte_buffer* answer) {
  grpc_op ops[2] = {};
  size_t count = 0;
  if (answer != nullptr) {
    if (!metadata_sent_) {
      // Through the C++ stream, so that it knows the headers went: its
      // Finish() then sends only the status.
      metadata_sent_ = true;
      call_->stream()->SendInitialMetadata(call_->Begin(&metadata_));
    }
    sent_ = answer;
    ops[count].op = GRPC_OP_SEND_MESSAGE;
    ops[count].data.send_message.send_message = sent_;
    ++count;
  }
  ops[count].op = GRPC_OP_RECV_MESSAGE;
  ops[count].data.recv_message.recv_message = &received_;
  ++count;
  const grpc_call_error started = call_->StartBatch(ops, count, &batch_);
  if (started != GRPC_CALL_OK) {
    // Not expected (one batch at a time, a valid call): end rather than
    // wait for a completion that will not come.
    spdlog::error("heartbeat stream from {}: batch refused ({})", peer_,
                  static_cast<int>(started));
    if (sent_ != nullptr) grpc_byte_buffer_destroy(sent_);
    sent_ = nullptr;
    StartFinish(grpc::Status(grpc::StatusCode::INTERNAL, "batch refused"),
                nullptr);
  }
}

void HeartbeatStream::OnBatch(bool ok) {
  // The door's deadline for a first request no longer applies (a late one
  // was cancelled: its read failed).
  call_->RequestArrived();
  bool finished = false;
  {
    absl::MutexLock lock(&mu_);
    // gRPC is done with the answer it carried.
    if (sent_ != nullptr) grpc_byte_buffer_destroy(sent_);
    sent_ = nullptr;
    finished = finished_started_;
  }
  if (finished || !ok || received_ == nullptr) {
    if (received_ != nullptr) grpc_byte_buffer_destroy(received_);
    received_ = nullptr;
    // Aborted meanwhile; or the client went away (cancelled, vanished); or
    // it closed its side: the stream ends.
    if (!finished) {
      FinishOnce(
          ok ? grpc::Status::OK
             : grpc::Status(grpc::StatusCode::CANCELLED, "the stream broke"));
    }
    return;
  }
  HandleRequest();
}

void HeartbeatStream::HandleRequest() {
  absl::Status parsed = request_.Read(received_, max_request_bytes_);
  grpc_byte_buffer_destroy(received_);
  received_ = nullptr;
  if (!parsed.ok()) {
    spdlog::debug("heartbeat stream from {} ended: {}", peer_,
                  parsed.ToString());
    FinishOnce(parsed);
    return;
  }
  const metasrv::v1::HeartbeatFrame& request = request_.request();
  const bool first = handshake_;
  if (first && request.header().role() == greptime::v1::meta::FLOWNODE) {
    flownode_ = request_.node_id();
  }
  absl::Status handled = handler_->Handle(&request_, handshake_, &response_);
  handshake_ = false;
  if (first && flownode_.has_value() &&
      request.header().role() == greptime::v1::meta::FLOWNODE) {
    // Logged once handled: a follower's refusal is a refusal, not a
    // connection. Bounded: 10,000 flownodes reconnecting after a failover
    // are one line per interval, the rest counted
    // (metasrv_log_lines_suppressed_total).
    const std::string node = absl::StrCat(*flownode_);
    const LogFields fields(
        {{"node_id", node}, {"peer", peer_}, {"role", "flownode"}});
    if (absl::IsAborted(handled)) {
      LogLimited(spdlog::level::info, "flownode_refused", node,
                 "flownode {} from {} refused: this replica does not lead",
                 *flownode_, peer_);
    } else if (handled.ok()) {
      LogLimited(spdlog::level::info, "flownode_connected", node,
                 "flownode {} connected from {}", *flownode_, peer_);
    }
  }
  if (absl::IsAborted(handled)) {
    // Not leader: the answer says so, then the stream ends with ABORTED and
    // no GreptimeDB metadata, as upstream's does (its client so reads it as
    // not retryable and asks for the leader).
    FinishOnce(ToGrpcStatus(handled), &response_);
    return;
  }
  if (!handled.ok()) {
    spdlog::debug("heartbeat stream from {} ended: {}", peer_,
                  handled.ToString());
    FinishOnce(handled);
    return;
  }
  grpc_byte_buffer* answer = Serialize(response_);
  absl::MutexLock lock(&mu_);
  // Aborted while handling (a step-down, shutdown): the stream is ending.
  if (finished_started_) {
    grpc_byte_buffer_destroy(answer);
    return;
  }
  StartBatch(answer);
}

void HeartbeatStream::Abort(const grpc::Status& status) { FinishOnce(status); }

void HeartbeatStream::FinishOnce(
    const grpc::Status& status,
    const greptime::v1::meta::HeartbeatResponse* answer) {
  absl::MutexLock lock(&mu_);
  if (finished_started_) return;
  StartFinish(status, answer);
}

void HeartbeatStream::FinishOnce(const absl::Status& status) {
  // The error's metadata goes into the trailers before the status is sent.
  absl::MutexLock lock(&mu_);
  if (finished_started_) return;
  StartFinish(ToGrpcStatus(status, call_->context()), nullptr);
}

void HeartbeatStream::StartFinish(
    const grpc::Status& status,
    const greptime::v1::meta::HeartbeatResponse* answer) {
  finished_started_ = true;
  call_->Finishing(static_cast<int>(status.error_code()));
  // Behind an answer in flight, if any: gRPC sends the status after it.
  if (answer != nullptr) {
    grpc::ByteBuffer bytes;
    SerializeMessage(*answer, &bytes);
    call_->stream()->WriteAndFinish(bytes, grpc::WriteOptions(), status,
                                    call_->BeginFinish(&finished_));
  } else {
    call_->stream()->Finish(status, call_->BeginFinish(&finished_));
  }
}

void HeartbeatStream::OnDone() {
  // Out of the open count before it is counted handled (when the call is
  // deleted), so a scrape that sees it handled never still sees it open.
  if (registered_) registry_->Remove(this);
  if (flownode_.has_value()) {
    const LogFields fields({{"node_id", absl::StrCat(*flownode_)},
                            {"peer", peer_},
                            {"role", "flownode"}});
    LogLimited(spdlog::level::info, "flownode_disconnected",
               absl::StrCat(*flownode_), "flownode {} (from {}) disconnected",
               *flownode_, peer_);
  }
}

}  // namespace metasrv::server
