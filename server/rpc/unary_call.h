// A unary call of a method that takes raw bytes: the request decoded (zstd
// included, see request_decoder.h) into an arena, the response built on the
// same arena and sent, with the status, in one batch when the method
// finishes it. Until gRPC has taken the answer, its bytes count against the
// ReplyBudget.
#ifndef METASRV_SERVER_RPC_UNARY_CALL_H_
#define METASRV_SERVER_RPC_UNARY_CALL_H_

#include <google/protobuf/arena.h>
#include <grpcpp/impl/codegen/proto_utils.h>
#include <grpcpp/support/byte_buffer.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "server/rpc/grpc_status.h"
#include "server/rpc/read_executor.h"
#include "server/rpc/reply_budget.h"
#include "server/rpc/request_decoder.h"
#include "server/rpc/server_call.h"

namespace metasrv::server {

// What every unary call is held to.
struct CallLimits {
  size_t max_request_bytes = 4 << 20;  // An inflated request, at most.
  ReplyBudget* replies = nullptr;      // Answers in flight; null: unbounded.
};

// The handler of one unary call. Its method (`serve`) gets it once the
// request is decoded and finishes it, at once or later from any thread,
// exactly once.
template <typename Request, typename Response>
class UnaryCall final : public CallHandler {
 public:
  // What a method does with a decoded request.
  using Serve = std::function<void(UnaryCall*)>;

  // `serve` (the method table's) outlives the call.
  UnaryCall(ServerCall* call, const CallLimits& limits, const Serve* serve)
      : call_(call),
        limits_(limits),
        serve_(serve),
        read_(this, &UnaryCall::OnRead),
        finished_(this, &UnaryCall::OnFinished),
        request_(google::protobuf::Arena::CreateMessage<Request>(&arena_)),
        response_(google::protobuf::Arena::CreateMessage<Response>(&arena_)) {}

  // A handler factory for the dispatcher: calls of one method.
  static CallHandlerFactory Factory(CallLimits limits, Serve serve) {
    auto shared = std::make_shared<const Serve>(std::move(serve));
    return [limits, shared](ServerCall* call) -> std::unique_ptr<CallHandler> {
      return std::make_unique<UnaryCall>(call, limits, shared.get());
    };
  }

  ServerCall* call() const { return call_; }
  grpc::ServerContextBase* context() const { return call_->context(); }
  const Request& request() const { return *request_; }
  Response* response() { return response_; }
  // Whether the client cancelled the call or its deadline passed: work for
  // it is wasted.
  bool cancelled() const { return call_->cancelled(); }

  // Makes `bytes` the answer instead of response(): an answer built without
  // the message (cached encodings). Call before Finish(OkStatus()).
  void SetResponseBytes(grpc::ByteBuffer bytes) {
    out_.Swap(&bytes);
    raw_ = true;
  }

  // Sends the response (when `status` is OK) or the error. An answer that
  // does not fit the reply budget is refused with RESOURCE_EXHAUSTED.
  void Finish(const absl::Status& status) {
    grpc::Status result = ToGrpcStatus(status, context());
    if (!result.ok()) out_.Clear();
    if (result.ok() && !raw_) {
      bool own = false;
      result = grpc::SerializationTraits<Response>::Serialize(*response_, &out_,
                                                              &own);
    }
    if (result.ok()) result = Charge();
    // The answer is serialized: its messages are no longer needed.
    request_ = nullptr;
    response_ = nullptr;
    arena_.Reset();
    call_->Finishing(result.error_code());
    if (result.ok()) {
      call_->stream()->WriteAndFinish(out_, grpc::WriteOptions(), result,
                                      call_->BeginFinish(&finished_));
    } else {
      call_->stream()->Finish(result, call_->BeginFinish(&finished_));
    }
  }

  void Start() override { call_->stream()->Read(&in_, call_->Begin(&read_)); }

 private:
  // The answer's bytes charged to the budget; an error if they do not fit.
  grpc::Status Charge() {
    ReplyBudget* budget = limits_.replies;
    if (budget == nullptr) return grpc::Status::OK;
    const uint64_t bytes = out_.Length();
    if (budget->limit() != 0 && bytes > budget->limit()) {
      // Larger than the whole budget: it would never fit; retrying cannot
      // help, asking for less can.
      out_.Clear();
      return ToGrpcStatus(
          absl::FailedPreconditionError(absl::StrCat(
              "the answer has ", bytes,
              " bytes, more than --max_reply_bytes_in_flight (",
              budget->limit(), "); ask for fewer nodes, flows or keys")),
          context());
    }
    if (!budget->TryTake(bytes)) {
      out_.Clear();
      return ToGrpcStatus(
          absl::ResourceExhaustedError(absl::StrCat(
              "too many answers in flight that clients have not read (",
              budget->used(), " of ", budget->limit(), " bytes); retry later")),
          context());
    }
    held_ = bytes;
    return grpc::Status::OK;
  }

  void OnRead(bool ok) {
    if (!ok) {
      // No request: the client went away, or half-closed without one.
      Finish(absl::InternalError("the call carried no request message"));
      return;
    }
    absl::Status decoded =
        DecodeRequest(&in_, limits_.max_request_bytes, request_);
    in_.Clear();
    if (!decoded.ok()) {
      Finish(decoded);
      return;
    }
    (*serve_)(this);
  }
  void OnFinished(bool) {
    out_.Clear();
    if (held_ != 0) limits_.replies->Give(held_);
    held_ = 0;
  }

  ServerCall* const call_;         // The call; owns this.
  const CallLimits limits_;        // Request size, reply budget.
  const Serve* const serve_;       // The method; the table's.
  CallOp<UnaryCall> read_;         // The request read.
  CallOp<UnaryCall> finished_;     // The answer and status sent.
  grpc::ByteBuffer in_;            // The request's bytes, until decoded.
  grpc::ByteBuffer out_;           // The answer's bytes, until sent.
  uint64_t held_ = 0;              // Bytes taken from the budget.
  bool raw_ = false;               // SetResponseBytes() made the answer.
  google::protobuf::Arena arena_;  // Holds both messages.
  Request* request_;               // On arena_; null once answered.
  Response* response_;             // On arena_; null once answered.
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

#endif  // METASRV_SERVER_RPC_UNARY_CALL_H_
