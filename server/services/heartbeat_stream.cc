#include "server/services/heartbeat_stream.h"

#include <grpcpp/impl/codegen/proto_utils.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "server/ops/log_limit.h"
#include "server/ops/logging.h"
#include "server/rpc/grpc_status.h"
#include "spdlog/spdlog.h"

namespace metasrv::server {

HeartbeatStream::HeartbeatStream(HeartbeatHandler* handler,
                                 StreamRegistry* registry,
                                 size_t max_request_bytes,
                                 grpc::CallbackServerContext* context,
                                 CallSeries* series)
    : handler_(handler),
      registry_(registry),
      context_(context),
      max_request_bytes_(max_request_bytes),
      peer_(context->peer()),
      counted_(series) {
  absl::Status added = registry_->Add(this);
  if (!added.ok()) {
    LogLimited(spdlog::level::warn, "heartbeat_stream_refused",
               "heartbeat stream from {} refused: {}", peer_, added.ToString());
    FinishOnce(added);
    return;
  }
  registered_ = true;
  StartRead(&read_buffer_);
}

void HeartbeatStream::OnReadDone(bool ok) {
  if (!ok) {
    // The client closed its side, or vanished, or we are finishing.
    FinishOnce(grpc::Status::OK);
    return;
  }
  HandleRead();
}

void HeartbeatStream::HandleRead() {
  absl::Status parsed = request_.Read(&read_buffer_, max_request_bytes_);
  if (!parsed.ok()) {
    spdlog::debug("heartbeat stream from {} ended: {}", peer_,
                  parsed.ToString());
    FinishOnce(parsed);
    return;
  }
  const metasrv::v1::HeartbeatFrame* request = &request_.request();
  if (handshake_ && request->header().role() == greptime::v1::meta::FLOWNODE) {
    flownode_ = HeartbeatHandler::NodeId(*request);
    // Bounded: 10,000 flownodes reconnecting after a failover are one line
    // per interval, the rest counted (metasrv_log_lines_suppressed_total).
    if (flownode_.has_value()) {
      const LogFields fields({{"node_id", absl::StrCat(*flownode_)},
                              {"peer", peer_},
                              {"role", "flownode"}});
      LogLimited(spdlog::level::info, "flownode_connected",
                 "flownode {} connected from {}", *flownode_, peer_);
    }
  }
  absl::Status handled = handler_->Handle(&request_, handshake_, &response_);
  handshake_ = false;
  if (!handled.ok() && !absl::IsAborted(handled)) {
    spdlog::debug("heartbeat stream from {} ended: {}", peer_,
                  handled.ToString());
    FinishOnce(handled);
    return;
  }
  // A fresh buffer for every answer: Serialize() expects an empty one.
  grpc::ByteBuffer answer;
  bool own_buffer = false;
  grpc::Status serialized = grpc::SerializationTraits<
      greptime::v1::meta::HeartbeatResponse>::Serialize(response_, &answer,
                                                        &own_buffer);
  if (!serialized.ok()) {
    FinishOnce(absl::InternalError("cannot serialize the response"));
    return;
  }
  absl::MutexLock lock(&mu_);
  // Aborted while handling (a step-down, shutdown): the stream is ending.
  if (end_.finished) return;
  if (absl::IsAborted(handled)) {
    // Not leader: the response says so, then the stream ends.
    end_.finish_after_write = ToGrpcStatus(handled, context_);
  }
  // No write is in flight (the next read starts when it completes), so
  // gRPC holds no reference to the previous answer's buffer.
  write_buffer_.Swap(&answer);
  end_.write_in_flight = true;
  StartWrite(&write_buffer_);
}

void HeartbeatStream::OnWriteDone(bool ok) {
  StreamEnd::AfterWrite next;
  {
    absl::MutexLock lock(&mu_);
    next = end_.WriteDone(ok);
    // Read under the lock, so Abort() cannot finish the stream meanwhile.
    if (next.go_on) StartRead(&read_buffer_);
  }
  if (next.finish.has_value()) FinishOnce(*next.finish);
}

void HeartbeatStream::Abort(const grpc::Status& status) {
  {
    absl::MutexLock lock(&mu_);
    // Decided under the lock, so OnReadDone() cannot start a write now.
    if (!end_.Abort(status)) return;
  }
  FinishWith(status);
}

void HeartbeatStream::FinishOnce(const grpc::Status& status) {
  {
    absl::MutexLock lock(&mu_);
    if (!end_.TryFinish()) return;
  }
  FinishWith(status);
}

void HeartbeatStream::FinishOnce(const absl::Status& status) {
  grpc::Status finish;
  {
    absl::MutexLock lock(&mu_);
    if (!end_.TryFinish()) return;
    // The error's metadata goes into the trailers before anyone can finish.
    finish = ToGrpcStatus(status, context_);
  }
  FinishWith(finish);
}

void HeartbeatStream::FinishWith(const grpc::Status& status) {
  counted_.Finishing(static_cast<int>(status.error_code()));
  Finish(status);
}

void HeartbeatStream::OnDone() {
  // Out of the open count before it is counted handled, so a scrape that
  // sees it handled never still sees it open.
  if (registered_) registry_->Remove(this);
  counted_.Done();
  if (flownode_.has_value()) {
    const LogFields fields({{"node_id", absl::StrCat(*flownode_)},
                            {"peer", peer_},
                            {"role", "flownode"}});
    LogLimited(spdlog::level::info, "flownode_disconnected",
               "flownode {} (from {}) disconnected", *flownode_, peer_);
  }
  delete this;
}

}  // namespace metasrv::server
