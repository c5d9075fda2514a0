// A unary call of a method that takes raw bytes, through the door
// (call_door.h): its request (due within --request_timeout, see
// ServerCall::ArmRequestDeadline) is decoded (zstd included, see
// grpc151_zstd_requests.h) into an arena and admitted by the method's leader
// policy; only then does the method see it, with the admission. The response is
// built on the same arena and sent, with the status, in one batch when the
// method finishes it. Until gRPC has taken the answer, its bytes count against
// its peer's share and the reply budget, and a large answer left unread past
// --reply_stall_limit is cancelled.
#ifndef METASRV_SERVER_RPC_UNARY_CALL_H_
#define METASRV_SERVER_RPC_UNARY_CALL_H_

#include <google/protobuf/arena.h>
#include <grpcpp/alarm.h>
#include <grpcpp/support/byte_buffer.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "server/rpc/call_door.h"
#include "server/rpc/call_handlers.h"
#include "server/rpc/grpc151_zstd_requests.h"
#include "server/rpc/grpc_status.h"
#include "server/rpc/method_table.h"
#include "server/rpc/read_executor.h"
#include "server/rpc/raw_request.h"
#include "server/rpc/server_call.h"

namespace metasrv::server {

// One unary call, as a method sees it on either transport. Its method
// (`serve`) gets it once the request is decoded and admitted, and finishes
// it, at once or later from any thread, exactly once.
template <typename Request, typename Response>
class UnaryCall {
 public:
  // What a method does with a decoded request.
  using Serve = std::function<void(UnaryCall*)>;
  // Both transports' handlers of the method, which the dispatcher names
  // once (CallDispatcher::Add). Defined below the two shapes.
  static MethodHandlers Factory(CallLimits limits, Serve serve);

  virtual ~UnaryCall() = default;
  const Request& request() const { return *request_; }
  // How the door admitted it: serve it, or answer GreptimeDB's not-leader
  // header; and the flow-state term of the leadership it was admitted under.
  const Admission& admission() const { return admission_; }
  Response* response() { return response_; }
  // The client's address ("ipv4:10.0.0.1:5000").
  virtual const std::string& peer() const = 0;
  // Whether the client cancelled the call or its deadline passed: work for
  // it is wasted.
  virtual bool cancelled() const = 0;
  // Makes `bytes` the answer instead of response(): an answer built without
  // the message (cached encodings). Call before Finish(OkStatus()).
  virtual void SetResponseBytes(grpc::ByteBuffer bytes) = 0;
  // Sends the response (when `status` is OK) or the error. An answer that
  // does not fit the reply budget is refused with RESOURCE_EXHAUSTED.
  virtual void Finish(const absl::Status& status) = 0;

 protected:
  UnaryCall()
      : request_(google::protobuf::Arena::CreateMessage<Request>(&arena_)),
        response_(google::protobuf::Arena::CreateMessage<Response>(&arena_)) {}
  // Decodes `raw` and admits the call by its method's leader policy.
  absl::Status DecodeAndAdmit(const RawRequest& raw, const CallLimits& limits,
                              Method method) {
    if (absl::Status decoded =
            raw.DecodeInto(request_, limits.max_request_bytes);
        !decoded.ok()) {
      return decoded;
    }
    if (limits.door == nullptr) return absl::OkStatus();
    absl::StatusOr<Admission> admitted = limits.door->AdmitLeader(method);
    if (!admitted.ok()) return admitted.status();
    admission_ = *admitted;
    return absl::OkStatus();
  }
  // The messages are no longer needed (the answer is serialized).
  void DropMessages() {
    request_ = nullptr;
    response_ = nullptr;
    arena_.Reset();
  }

  google::protobuf::Arena arena_;  // Holds both messages.
  Request* request_;               // On arena_; null once answered.
  Response* response_;             // On arena_; null once answered.
  Admission admission_;            // Set before the method runs.
};

template <typename Request, typename Response>
class CqUnaryCall;
template <typename Request, typename Response>
class H2UnaryCall;

// The unary shape on gRPC 1.51's completion queue.
template <typename Request, typename Response>
class CqUnaryCall final : public UnaryCall<Request, Response>,
                          public CallHandler {
 public:
  using Serve = typename UnaryCall<Request, Response>::Serve;

  // `serve` outlives the call, whose row (ServerCall::row()) names its
  // method.
  CqUnaryCall(ServerCall* call, const CallLimits& limits, const Serve* serve)
      : call_(call),
        method_(call->row()->method),
        limits_(limits),
        serve_(serve),
        read_(this, &CqUnaryCall::OnRead),
        finished_(this, &CqUnaryCall::OnFinished),
        reply_due_(this, &CqUnaryCall::OnReplyDue) {}

  ServerCall* call() const { return call_; }
  grpc::ServerContextBase* context() const { return call_->context(); }
  const std::string& peer() const override { return call_->peer(); }
  bool cancelled() const override { return call_->cancelled(); }
  void SetResponseBytes(grpc::ByteBuffer bytes) override {
    out_.Swap(&bytes);
    raw_ = true;
  }

  void Finish(const absl::Status& status) override {
    grpc::Status result = ToGrpcStatus(status, context());
    if (!result.ok()) out_.Clear();
    if (result.ok() && !raw_) {
      result = SerializeMessage(*this->response_, &out_);
    }
    if (result.ok()) result = Charge();
    // The answer is serialized: its messages are no longer needed.
    this->DropMessages();
    call_->Finishing(result.error_code());
    if (result.ok()) {
      if (held_ != 0 && limits_.door->Watches(held_)) {
        // Cancelled if the client has not taken it by then (OnReplyDue);
        // until it is taken, the ledger may end it for another host.
        call_->ticket()->Touch();
        attached_ = call_->ticket()->Attach(call_).ok();
        reply_armed_ = true;
        reply_alarm_.Set(
            call_->cq(),
            absl::ToChronoTime(absl::Now() +
                               limits_.door->options().reply_stall_limit),
            call_->Begin(&reply_due_));
      }
      call_->stream()->WriteAndFinish(out_, grpc::WriteOptions(), result,
                                      call_->BeginFinish(&finished_));
    } else {
      call_->stream()->Finish(result, call_->BeginFinish(&finished_));
    }
  }

  void Start() override { call_->stream()->Read(&in_, call_->Begin(&read_)); }

 private:
  // The answer's bytes charged to its peer and the reply budget; an error
  // if they do not fit.
  grpc::Status Charge() {
    if (limits_.door == nullptr) return grpc::Status::OK;
    const uint64_t bytes = out_.Length();
    if (absl::Status taken =
            limits_.door->TakeReply(*call_->row(), call_->ticket(), bytes);
        !taken.ok()) {
      out_.Clear();
      return ToGrpcStatus(taken, context());
    }
    held_ = bytes;
    return grpc::Status::OK;
  }

  void OnRead(bool ok) {
    if (!call_->RequestArrived()) {
      // The door's deadline passed first: the call was cancelled.
      Finish(absl::DeadlineExceededError(
          "the request did not arrive within --request_timeout"));
      return;
    }
    if (!ok) {
      // No request: the client went away, or half-closed without one.
      Finish(absl::InternalError("the call carried no request message"));
      return;
    }
    call_->GotRequest();
    absl::Status admitted =
        this->DecodeAndAdmit(RawRequest(&in_), limits_, method_);
    in_.Clear();
    if (!admitted.ok()) {
      Finish(admitted);
      return;
    }
    (*serve_)(this);
  }
  void OnFinished(bool) {
    answered_.store(true);
    if (attached_) call_->ticket()->Detach(call_);
    if (reply_armed_) reply_alarm_.Cancel();
    if (held_ != 0) limits_.door->GiveReply(call_->ticket(), held_);
    out_.Clear();
    held_ = 0;
  }
  void OnReplyDue(bool fired) {
    if (!fired || answered_.load()) return;
    // Unread past the stall limit while holding its peer's share and the
    // budget: cancelled, which gives both back (OnFinished).
    limits_.door->metrics()->DoorRefused(DoorRefusal::kReplyStalled);
    context()->TryCancel();
  }

  ServerCall* const call_;             // The call; owns this.
  const Method method_;                // Its row in the method table.
  const CallLimits limits_;            // Request size, the door.
  const Serve* const serve_;           // The method; the table's.
  CallOp<CqUnaryCall> read_;           // The request read.
  CallOp<CqUnaryCall> finished_;       // The answer and status sent.
  CallOp<CqUnaryCall> reply_due_;      // The answer's stall limit.
  grpc::Alarm reply_alarm_;            // Set for a large answer, with a door.
  std::atomic<bool> answered_{false};  // The answer's batch completed.
  bool reply_armed_ = false;           // reply_alarm_ was set.
  bool attached_ = false;              // Its answer may be ended for others.
  grpc::ByteBuffer in_;                // The request's bytes, until decoded.
  grpc::ByteBuffer out_;               // The answer's bytes, until sent.
  uint64_t held_ = 0;                  // Bytes taken from the budget.
  bool raw_ = false;                   // SetResponseBytes() made the answer.
};

// Runs `read(request, response)` (returning an absl::Status) for `call` on
// `reads` and finishes the call with it. A call cancelled while it waited
// (the client gave up, its deadline passed) costs nothing more: it finishes
// with CANCELLED without reading. A full queue finishes it with
// RESOURCE_EXHAUSTED.
template <typename Request, typename Response, typename Read>
void ScheduleRead(ReadExecutor* reads, ReadCost cost,
                  UnaryCall<Request, Response>* call, Read read) {
  absl::Status queued = reads->Schedule(cost, [call, read] {
    if (call->cancelled()) {
      call->Finish(
          absl::CancelledError("the call was cancelled while it waited"));
      return;
    }
    call->Finish(read(call->request(), call->response()));
  });
  if (!queued.ok()) call->Finish(queued);
}

}  // namespace metasrv::server

// The nghttp2 shape needs the base above; the factory below needs both.
#include "server/rpc/h2_unary_call.h"  // IWYU pragma: export

namespace metasrv::server {

template <typename Request, typename Response>
MethodHandlers UnaryCall<Request, Response>::Factory(CallLimits limits,
                                                     Serve serve) {
  auto shared = std::make_shared<const Serve>(std::move(serve));
  MethodHandlers handlers;
  handlers.cq = [limits,
                 shared](ServerCall* call) -> std::unique_ptr<CallHandler> {
    return std::make_unique<CqUnaryCall<Request, Response>>(call, limits,
                                                            shared.get());
  };
  handlers.h2 = [limits, shared](H2Start start) {
    H2UnaryCall<Request, Response>::Start(std::move(start), limits,
                                          shared.get());
  };
  return handlers;
}

}  // namespace metasrv::server

#endif  // METASRV_SERVER_RPC_UNARY_CALL_H_
