#include "server/rpc/push_call.h"

#include <grpc/grpc.h>
#include <grpc/slice.h>

#include <utility>

#include "server/ops/log_limit.h"
#include "server/rpc/call_ledger.h"
#include "server/rpc/grpc_status.h"
#include "server/rpc/h2_push_call.h"
#include "spdlog/spdlog.h"

namespace metasrv::server {
namespace {

grpc_byte_buffer* CoreBuffer(const std::vector<grpc::Slice>& slices) {
  std::vector<grpc_slice> refs;
  refs.reserve(slices.size());
  for (const grpc::Slice& s : slices) refs.push_back(s.c_slice());
  grpc_byte_buffer* raw = grpc_raw_byte_buffer_create(refs.data(), refs.size());
  for (grpc_slice& ref : refs) grpc_slice_unref(ref);
  return raw;
}

grpc_byte_buffer* CoreBuffer(const google::protobuf::MessageLite& message) {
  const size_t size = message.ByteSizeLong();
  grpc_slice slice = grpc_slice_malloc(size);
  message.SerializeWithCachedSizesToArray(GRPC_SLICE_START_PTR(slice));
  grpc_byte_buffer* raw = grpc_raw_byte_buffer_create(&slice, 1);
  grpc_slice_unref(slice);
  return raw;
}

// References to `raw`'s slices, as shared pieces.
std::vector<SharedBytes> PiecesOfCore(grpc_byte_buffer* raw) {
  std::vector<SharedBytes> pieces;
  const grpc_slice_buffer& buffer = raw->data.raw.slice_buffer;
  for (size_t i = 0; i < buffer.count; ++i) {
    auto slice = std::make_shared<const grpc::Slice>(
        grpc::Slice(buffer.slices[i], grpc::Slice::ADD_REF));
    const absl::string_view bytes(
        reinterpret_cast<const char*>(slice->begin()), slice->size());
    pieces.push_back({std::move(slice), bytes});
  }
  return pieces;
}

}  // namespace

SharedMessage::SharedMessage(const std::vector<grpc::Slice>& slices)
    : raw_(CoreBuffer(slices)), pieces_(PiecesOfCore(raw_)) {}

SharedMessage::SharedMessage(const google::protobuf::MessageLite& message)
    : raw_(CoreBuffer(message)), pieces_(PiecesOfCore(raw_)) {}

MethodHandlers PushCall::Factory(CallLimits limits, MakeHandler make) {
  auto shared = std::make_shared<const MakeHandler>(std::move(make));
  MethodHandlers handlers;
  handlers.cq = [limits,
                 shared](ServerCall* call) -> std::unique_ptr<CallHandler> {
    return std::make_unique<CqPushCall>(call, limits, (*shared)(call));
  };
  handlers.h2 = [limits, shared](H2Start start) {
    H2PushCall::Start(std::move(start), limits, (*shared)(nullptr));
  };
  return handlers;
}

CqPushCall::CqPushCall(ServerCall* call, CallLimits limits,
                   std::unique_ptr<Handler> handler)
    : call_(call),
      limits_(limits),
      handler_(std::move(handler)),
      read_(this, &CqPushCall::OnRead),
      metadata_(this, &CqPushCall::OnSent),
      written_(this, &CqPushCall::OnWriteDone),
      finished_(this, &CqPushCall::OnSent) {}

void CqPushCall::Start() {
  call_->stream()->Read(&request_, call_->Begin(&read_));
}

void CqPushCall::OnRead(bool ok) {
  // The door's deadline for a first request no longer applies (a late one
  // was cancelled: its read failed).
  call_->RequestArrived();
  if (!ok) {
    FinishOnce(grpc::Status(grpc::StatusCode::INTERNAL,
                            "the call carried no request message"));
    return;
  }
  call_->GotRequest();
  absl::Status accepted = handler_->OnRequest(RawRequest(&request_), this);
  request_.Clear();
  if (accepted.ok() && call_->ticket() != nullptr) {
    accepted = call_->ticket()->Attach(this);
    attached_ = accepted.ok();
  }
  if (!accepted.ok()) {
    FinishOnce(ToGrpcStatus(accepted, call_->context()));
    return;
  }
  bool write = false;
  {
    absl::MutexLock lock(&mu_);
    if (end_.finished) return;
    // The headers first, through the C++ stream (so that its Finish() sends
    // only the status), then what was offered meanwhile.
    call_->stream()->SendInitialMetadata(call_->Begin(&metadata_));
    started_ = true;
    if (next_ != nullptr && !end_.write_in_flight) {
      write = StartWriteOf(std::move(next_));
      next_.reset();
    }
  }
  if (write) Write();
}

bool CqPushCall::Offer(std::shared_ptr<const PushItem> item) {
  bool stalled = false;  // End it rather than send.
  {
    absl::MutexLock lock(&mu_);
    if (end_.finished || end_.finish_after_write.has_value()) return false;
    if (offered_.has_value() && item->sequence <= *offered_) return false;
    offered_ = item->sequence;
    if (!started_ || end_.write_in_flight) {
      if (end_.write_in_flight && limits_.door != nullptr &&
          limits_.door->Stalled(write_started_)) {
        next_.reset();
        end_.finish_after_write = grpc::Status(
            grpc::StatusCode::RESOURCE_EXHAUSTED, "the client does not read");
        stalled = true;
      } else {
        const bool skipped = next_ != nullptr;
        next_ = std::move(item);
        return skipped;
      }
    } else if (!StartWriteOf(std::move(item))) {
      return false;
    }
  }
  if (stalled) {
    EndStalled();
  } else {
    Write();
  }
  return false;
}

bool CqPushCall::StartWriteOf(std::shared_ptr<const PushItem> item) {
  const SharedMessage* message = handler_->Choose(*item);
  if (message == nullptr) return false;
  end_.write_in_flight = true;
  write_started_ =
      limits_.door != nullptr ? limits_.door->Now() : absl::InfinitePast();
  write_buffer_ = message->NewWrite();
  in_flight_ = std::move(item);
  return true;
}

void CqPushCall::Write() {
  grpc_op op = {};
  op.op = GRPC_OP_SEND_MESSAGE;
  op.data.send_message.send_message = write_buffer_;
  if (call_->StartBatch(&op, 1, &written_) != GRPC_CALL_OK) {
    // Not expected (one write at a time, a valid call): complete it as a
    // failed write, which ends the stream.
    spdlog::error("push stream from {}: write refused", peer());
    call_->Begin(&written_);
    written_.Complete(false);
  }
}

void CqPushCall::EndStalled() {
  // What the client is told, ahead of the cancellation gRPC reports.
  call_->Finishing(GRPC_STATUS_RESOURCE_EXHAUSTED);
  limits_.door->metrics()->DoorRefused(DoorRefusal::kReplyStalled);
  handler_->OnStalled();
  LogLimited(spdlog::level::warn, "push_stalled",
             limits_.door->ledger().HostOf(peer()),
             "ended a {} stream from {}: its write was in flight for over "
             "--reply_stall_limit ({}) while answers exceeded "
             "--max_reply_bytes_in_flight",
             call_->row() != nullptr ? call_->row()->name : "push", peer(),
             absl::FormatDuration(limits_.door->options().reply_stall_limit));
  grpc_call_cancel_with_status(
      call_->c_call(), GRPC_STATUS_RESOURCE_EXHAUSTED,
      "this stream was not read while answers in flight exceeded "
      "--max_reply_bytes_in_flight; reconnect, and read what is sent",
      nullptr);
}

void CqPushCall::OnWriteDone(bool ok) {
  StreamEnd::AfterWrite after;
  bool write = false;
  {
    absl::MutexLock lock(&mu_);
    after = end_.WriteDone(ok);
    // gRPC is done with the bytes: what they are of may go.
    grpc_byte_buffer_destroy(write_buffer_);
    write_buffer_ = nullptr;
    in_flight_.reset();
    if (!after.go_on) {
      next_.reset();
    } else if (next_ != nullptr) {
      write = StartWriteOf(std::move(next_));
      next_.reset();
    }
  }
  if (after.finish.has_value()) {
    FinishOnce(*after.finish);
  } else if (write) {
    Write();
  }
}

void CqPushCall::OnCancel() {
  // The client went away. A write in flight completes with !ok.
  End(grpc::Status(grpc::StatusCode::CANCELLED, "the client cancelled"));
}

void CqPushCall::OnDone() {
  if (attached_) call_->ticket()->Detach(this);
  handler_->OnClose();
}

void CqPushCall::End(const grpc::Status& status) {
  {
    absl::MutexLock lock(&mu_);
    next_.reset();
    if (!end_.Abort(status)) return;
  }
  StartFinish(status);
}

void CqPushCall::FinishOnce(const grpc::Status& status) {
  {
    absl::MutexLock lock(&mu_);
    if (!end_.TryFinish()) return;
  }
  StartFinish(status);
}

void CqPushCall::StartFinish(const grpc::Status& status) {
  call_->Finishing(static_cast<int>(status.error_code()));
  call_->stream()->Finish(status, call_->BeginFinish(&finished_));
}

}  // namespace metasrv::server
