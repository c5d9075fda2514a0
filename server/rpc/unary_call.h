// A unary call of a raw (bytes) method: the request decoded (zstd included,
// see request_decoder.h) into an arena, the response built on the same arena
// and serialized into the call's output when the handler finishes it.
//
// The call is its own reactor, so it knows when the client went away
// (cancelled()) and when gRPC is done with the answer: until then the
// answer's bytes count against the ReplyBudget.
#ifndef METASRV_SERVER_RPC_UNARY_CALL_H_
#define METASRV_SERVER_RPC_UNARY_CALL_H_

#include <google/protobuf/arena.h>
#include <grpcpp/impl/codegen/proto_utils.h>
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/server_callback.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "server/rpc/grpc_status.h"
#include "server/rpc/read_executor.h"
#include "server/rpc/reply_budget.h"
#include "server/rpc/request_decoder.h"

namespace metasrv::server {

// What every unary call is held to.
struct CallLimits {
  size_t max_request_bytes = 4 << 20;  // An inflated request, at most.
  ReplyBudget* replies = nullptr;      // Answers in flight; null: unbounded.
};

// Lives from Start() until gRPC is done with it (OnDone). Finish() may be
// called from any thread, exactly once.
template <typename Request, typename Response>
class UnaryCall final : public grpc::ServerUnaryReactor {
 public:
  // Decodes `raw`. Returns the call, or null when the request does not
  // decode: the call is then already finished with the error. `*reactor` is
  // what the handler returns.
  static UnaryCall* Start(grpc::CallbackServerContext* context,
                          const grpc::ByteBuffer* raw, grpc::ByteBuffer* out,
                          const CallLimits& limits,
                          grpc::ServerUnaryReactor** reactor) {
    auto* call = new UnaryCall(context, out, limits.replies);
    *reactor = call;
    // gRPC hands the request as const; decoding may consume a copy (slices
    // are reference-counted, so the copy is cheap).
    grpc::ByteBuffer bytes(*raw);
    absl::Status decoded =
        DecodeRequest(&bytes, limits.max_request_bytes, call->request_);
    if (!decoded.ok()) {
      call->Finish(decoded);
      return nullptr;
    }
    return call;
  }

  const Request& request() const { return *request_; }
  Response* response() { return response_; }
  grpc::CallbackServerContext* context() const { return context_; }
  // Whether the client cancelled the call or its deadline passed: work for
  // it is wasted.
  bool cancelled() const { return cancelled_.load(std::memory_order_relaxed); }

  // Makes `bytes` the answer instead of response(): an answer built without
  // the message (cached encodings). Call before Finish(OkStatus()).
  void SetResponseBytes(grpc::ByteBuffer bytes) {
    out_->Swap(&bytes);
    raw_ = true;
  }

  // Sends the response (when `status` is OK) or the error. An answer that
  // does not fit the reply budget is refused with RESOURCE_EXHAUSTED.
  void Finish(const absl::Status& status) {
    grpc::Status result = ToGrpcStatus(status, context_);
    if (!result.ok()) out_->Clear();
    if (result.ok() && !raw_) {
      bool own = false;
      result = grpc::SerializationTraits<Response>::Serialize(*response_, out_,
                                                              &own);
    }
    if (result.ok() && budget_ != nullptr) {
      const uint64_t bytes = out_->Length();
      if (budget_->limit() != 0 && bytes > budget_->limit()) {
        // Larger than the whole budget: it would never fit; retrying cannot
        // help, asking for less can.
        out_->Clear();
        result = ToGrpcStatus(
            absl::FailedPreconditionError(absl::StrCat(
                "the answer has ", bytes,
                " bytes, more than --max_reply_bytes_in_flight (",
                budget_->limit(), "); ask for fewer nodes, flows or keys")),
            context_);
      } else if (budget_->TryTake(bytes)) {
        held_ = bytes;
      } else {
        out_->Clear();
        result = ToGrpcStatus(
            absl::ResourceExhaustedError(absl::StrCat(
                "too many answers in flight that clients have not read (",
                budget_->used(), " of ", budget_->limit(),
                " bytes); retry later")),
            context_);
      }
    }
    // The answer is serialized: its messages are no longer needed.
    request_ = nullptr;
    response_ = nullptr;
    arena_.Reset();
    grpc::ServerUnaryReactor::Finish(result);
  }

  void OnCancel() override {
    cancelled_.store(true, std::memory_order_relaxed);
  }
  void OnDone() override {
    if (held_ != 0) budget_->Give(held_);
    delete this;
  }

 private:
  UnaryCall(grpc::CallbackServerContext* context, grpc::ByteBuffer* out,
            ReplyBudget* budget)
      : context_(context),
        out_(out),
        budget_(budget),
        request_(google::protobuf::Arena::CreateMessage<Request>(&arena_)),
        response_(google::protobuf::Arena::CreateMessage<Response>(&arena_)) {}

  grpc::CallbackServerContext* const context_;  // The call; gRPC's.
  grpc::ByteBuffer* const out_;                 // The response bytes; gRPC's.
  ReplyBudget* const budget_;           // Borrowed; may be null (no bound).
  uint64_t held_ = 0;                   // Bytes taken from budget_.
  bool raw_ = false;                    // SetResponseBytes() made the answer.
  std::atomic<bool> cancelled_{false};  // OnCancel() ran.
  google::protobuf::Arena arena_;       // Holds both messages.
  Request* request_;                    // On arena_; null once sent.
  Response* response_;                  // On arena_; null once sent.
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
