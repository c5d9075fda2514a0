// The bidirectional stream shape: one answer per request, in order, one at
// a time. A method's logic is a StreamCall::Handler that sees each request
// as bytes (RawRequest) and fills the answer; the shape owns the rest of the
// call protocol: the request deadline, the reply charge through the door,
// the status sent exactly once, and ending the stream when the ledger says
// (AbortableCall: a step-down, silence, another host's fair share) behind
// any answer in flight.
//
// After the first request, sending one answer and receiving the next
// request are one core batch: one completion per request instead of two (a
// write's and a read's). The next answer is only made once the batch that
// carried the previous one completed.
#ifndef METASRV_SERVER_RPC_STREAM_CALL_H_
#define METASRV_SERVER_RPC_STREAM_CALL_H_

#include <grpc/byte_buffer.h>
#include <grpc/grpc.h>
#include <grpc/slice.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "server/rpc/grpc_status.h"
#include "server/rpc/raw_request.h"
#include "server/rpc/server_call.h"
#include "server/rpc/unary_call.h"

namespace metasrv::server {

// What the stream does after a request was handled.
class StreamStep {
 public:
  enum class Kind { kAnswer, kEnd, kAnswerThenEnd };
  // Send the answer, then read the next request.
  static StreamStep Answer() { return StreamStep(Kind::kAnswer, {}); }
  // End the stream with `status`, an error with GreptimeDB's metadata
  // (grpc_status.h).
  static StreamStep End(absl::Status status) {
    return StreamStep(Kind::kEnd, std::move(status));
  }
  // Send the answer, then end with `status` as it is, without metadata (a
  // not-leader answer, as upstream's).
  static StreamStep AnswerThenEnd(absl::Status status) {
    return StreamStep(Kind::kAnswerThenEnd, std::move(status));
  }
  Kind kind() const { return kind_; }
  const absl::Status& status() const { return status_; }

 private:
  StreamStep(Kind kind, absl::Status status)
      : kind_(kind), status_(std::move(status)) {}
  Kind kind_;
  absl::Status status_;
};

// A bidi stream of one answer per request, as its method sees it on either
// transport.
template <typename Answer>
class StreamCall {
 public:
  // A method's logic, one per call. Its callbacks run one at a time.
  class Handler {
   public:
    virtual ~Handler() = default;
    // The call starts (admitted by the door, and attached to its ledger
    // entry). An error ends it at once with that status; OnClose() is
    // still called.
    virtual absl::Status OnOpen(StreamCall* /*call*/) {
      return absl::OkStatus();
    }
    // One request. `answer` is the same message every time: the handler
    // sets it whole.
    virtual StreamStep OnRequest(const RawRequest& request, Answer* answer) = 0;
    // The call is over: nothing more is called.
    virtual void OnClose() {}
  };
  using MakeHandler = std::function<std::unique_ptr<Handler>(ServerCall*)>;

  // Both transports' handlers of the method, for the dispatcher. Defined
  // below the two shapes.
  static MethodHandlers Factory(CallLimits limits, MakeHandler make);

  virtual ~StreamCall() = default;
  // The client's address ("ipv4:10.0.0.1:5000").
  virtual const std::string& peer() const = 0;
  // Its client was told to send a request every `interval` and to retry
  // after `retry` (a handshake answer): from now on the stream is silent,
  // and ended by the door's sweep, past CallDoor::SilenceLimitFor of them.
  virtual void Told(absl::Duration interval, absl::Duration retry) = 0;
};

// The bidi shape on gRPC 1.51's completion queue.
template <typename Answer>
class CqStreamCall final : public StreamCall<Answer>,
                           public CallHandler,
                           public AbortableCall {
 public:
  using Handler = typename StreamCall<Answer>::Handler;

  CqStreamCall(ServerCall* call, CallLimits limits,
               std::unique_ptr<Handler> handler)
      : call_(call),
        limits_(limits),
        handler_(std::move(handler)),
        batch_(this, &CqStreamCall::OnBatch),
        metadata_(this, &CqStreamCall::OnSent),
        finished_(this, &CqStreamCall::OnSent) {}
  ~CqStreamCall() override {
    // Every batch completed before the call is deleted.
    if (received_ != nullptr) grpc_byte_buffer_destroy(received_);
    absl::MutexLock lock(&mu_);
    if (sent_ != nullptr) grpc_byte_buffer_destroy(sent_);
  }

  ServerCall* call() const { return call_; }
  const std::string& peer() const override { return call_->peer(); }

  void Told(absl::Duration interval, absl::Duration retry) override {
    CallLedger::Ticket* ticket = call_->ticket();
    if (ticket == nullptr || limits_.door == nullptr) return;
    ticket->SetTold(interval, limits_.door->SilenceLimitFor(interval, retry));
  }

  void Start() override {
    absl::Status opened = Attach();
    if (opened.ok()) opened = handler_->OnOpen(this);
    if (!opened.ok()) {
      FinishOnce(ToGrpcStatus(opened, call_->context()), nullptr);
      return;
    }
    absl::MutexLock lock(&mu_);
    if (!finished_started_) StartBatch(nullptr, 0);
  }
  void OnDone() override {
    if (attached_) call_->ticket()->Detach(this);
    handler_->OnClose();
  }
  // Ends the stream with `status`, behind the answer in flight if any.
  void Abort(const absl::Status& status) override {
    FinishOnce(ToGrpcStatus(status), nullptr);
  }

 private:
  // The ledger may end the call from now on (none without a door).
  absl::Status Attach() {
    if (call_->ticket() == nullptr) return absl::OkStatus();
    absl::Status attached = call_->ticket()->Attach(this);
    attached_ = attached.ok();
    return attached;
  }

  // Starts the batch that sends `answer` (null: none; the first read),
  // charged `held` bytes, and receives the next request. Takes `answer`.
  void StartBatch(grpc_byte_buffer* answer, uint64_t held)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
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
      held_ = held;
      ops[count].op = GRPC_OP_SEND_MESSAGE;
      ops[count].data.send_message.send_message = sent_;
      ++count;
    }
    ops[count].op = GRPC_OP_RECV_MESSAGE;
    ops[count].data.recv_message.recv_message = &received_;
    ++count;
    if (call_->StartBatch(ops, count, &batch_) != GRPC_CALL_OK) {
      // Not expected (one batch at a time, a valid call): end rather than
      // wait for a completion that will not come.
      DropSent();
      StartFinish(grpc::Status(grpc::StatusCode::INTERNAL, "batch refused"),
                  nullptr);
    }
  }

  // gRPC is done with the answer it was sent: its bytes and charge go.
  void DropSent() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (sent_ != nullptr) grpc_byte_buffer_destroy(sent_);
    sent_ = nullptr;
    if (held_ != 0) limits_.door->GiveReply(call_->ticket(), held_);
    held_ = 0;
  }

  // The batch in flight completed: the answer it carried was sent and the
  // next request arrived (or the client ended its side, or the call broke).
  void OnBatch(bool ok) {
    // The door's deadline for a first request no longer applies (a late
    // one was cancelled: its read failed).
    call_->RequestArrived();
    bool finished = false;
    {
      absl::MutexLock lock(&mu_);
      DropSent();
      finished = finished_started_;
    }
    if (finished || !ok || received_ == nullptr) {
      if (received_ != nullptr) grpc_byte_buffer_destroy(received_);
      received_ = nullptr;
      // Aborted meanwhile; or the client went away; or it closed its side.
      if (!finished) {
        FinishOnce(
            ok ? grpc::Status::OK
               : grpc::Status(grpc::StatusCode::CANCELLED, "the stream broke"),
            nullptr);
      }
      return;
    }
    call_->GotRequest();
    if (CallLedger::Ticket* ticket = call_->ticket()) ticket->Touch();
    const StreamStep step =
        handler_->OnRequest(RawRequest(received_), &answer_);
    grpc_byte_buffer_destroy(received_);
    received_ = nullptr;
    switch (step.kind()) {
      case StreamStep::Kind::kEnd:
        FinishOnce(ToGrpcStatus(step.status(), call_->context()), nullptr);
        return;
      case StreamStep::Kind::kAnswerThenEnd:
        FinishOnce(ToGrpcStatus(step.status()), &answer_);
        return;
      case StreamStep::Kind::kAnswer:
        break;
    }
    const size_t size = answer_.ByteSizeLong();
    if (limits_.door != nullptr) {
      if (absl::Status taken =
              limits_.door->TakeReply(*call_->row(), call_->ticket(), size);
          !taken.ok()) {
        FinishOnce(ToGrpcStatus(taken, call_->context()), nullptr);
        return;
      }
    }
    grpc_slice slice = grpc_slice_malloc(size);
    answer_.SerializeWithCachedSizesToArray(GRPC_SLICE_START_PTR(slice));
    grpc_byte_buffer* bytes = grpc_raw_byte_buffer_create(&slice, 1);
    grpc_slice_unref(slice);
    absl::MutexLock lock(&mu_);
    const uint64_t held = limits_.door != nullptr ? size : 0;
    if (finished_started_) {
      // Aborted while it was handled (a step-down, shutdown).
      grpc_byte_buffer_destroy(bytes);
      if (held != 0) limits_.door->GiveReply(call_->ticket(), held);
      return;
    }
    StartBatch(bytes, held);
  }

  // Ends the stream with `status` (and `answer` before it, if given)
  // unless it is ending already.
  void FinishOnce(const grpc::Status& status, const Answer* answer)
      ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    if (finished_started_) return;
    StartFinish(status, answer);
  }
  // Starts the finishing operation, behind the batch in flight if any.
  void StartFinish(const grpc::Status& status, const Answer* answer)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    finished_started_ = true;
    call_->Finishing(static_cast<int>(status.error_code()));
    if (answer != nullptr) {
      grpc::ByteBuffer bytes;
      SerializeMessage(*answer, &bytes);
      call_->stream()->WriteAndFinish(bytes, grpc::WriteOptions(), status,
                                      call_->BeginFinish(&finished_));
    } else {
      call_->stream()->Finish(status, call_->BeginFinish(&finished_));
    }
  }
  void OnSent(bool) {}  // Initial metadata or status sent.

  ServerCall* const call_;            // The call; owns this.
  const CallLimits limits_;           // The door, which charges answers.
  std::unique_ptr<Handler> handler_;  // The method's logic.
  bool attached_ = false;             // To its ledger entry, by Start().
  Answer answer_;                     // Reused per answer.
  CallOp<CqStreamCall> batch_;        // The batch in flight.
  CallOp<CqStreamCall> metadata_;     // Initial metadata, before answer 1.
  CallOp<CqStreamCall> finished_;     // The status sent.
  // The next request, once the batch completed; owned, until handled.
  grpc_byte_buffer* received_ = nullptr;

  // Guards the fields below. Held while starting an operation (so Abort()
  // cannot finish the stream in between), never while waiting for gRPC.
  absl::Mutex mu_;
  bool finished_started_ ABSL_GUARDED_BY(mu_) = false;  // Status sent once.
  bool metadata_sent_ ABSL_GUARDED_BY(mu_) = false;     // Before answer 1.
  // The answer of the batch in flight; owned until the batch completes.
  grpc_byte_buffer* sent_ ABSL_GUARDED_BY(mu_) = nullptr;
  uint64_t held_ ABSL_GUARDED_BY(mu_) = 0;  // Its bytes charged at the door.
};

}  // namespace metasrv::server

// The nghttp2 shape needs the base above; the factory below needs both.
#include "server/rpc/h2_stream_call.h"  // IWYU pragma: export

namespace metasrv::server {

template <typename Answer>
MethodHandlers StreamCall<Answer>::Factory(CallLimits limits,
                                           MakeHandler make) {
  auto shared = std::make_shared<const MakeHandler>(std::move(make));
  MethodHandlers handlers;
  handlers.cq = [limits,
                 shared](ServerCall* call) -> std::unique_ptr<CallHandler> {
    return std::make_unique<CqStreamCall<Answer>>(call, limits,
                                                  (*shared)(call));
  };
  handlers.h2 = [limits, shared](H2Start start) {
    H2StreamCall<Answer>::Start(std::move(start), limits, (*shared)(nullptr));
  };
  return handlers;
}

}  // namespace metasrv::server

#endif  // METASRV_SERVER_RPC_STREAM_CALL_H_
