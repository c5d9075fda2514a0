// A unary call of a method that takes raw bytes, through the door
// (call_door.h): its request (due within --request_timeout) is decoded (zstd
// included, see request_decoding.h) into an arena and admitted by the
// method's leader policy; only then does the method see it, with the
// admission. The response is built on the same arena and sent, with the
// status, when the method finishes it. Until the socket has taken the
// answer, its bytes count against its peer's share and the reply budget, and
// an answer left unwritten past --reply_stall_limit ends its call.
#ifndef METASRV_SERVER_RPC_UNARY_CALL_H_
#define METASRV_SERVER_RPC_UNARY_CALL_H_

#include <google/protobuf/arena.h>

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "server/rpc/answer_encoding.h"
#include "server/rpc/call_door.h"
#include "server/rpc/h2_door_call.h"
#include "server/rpc/method_table.h"
#include "server/rpc/raw_request.h"
#include "server/rpc/read_executor.h"
#include "server/rpc/shared_bytes.h"

namespace metasrv::server {

// One unary call. Its method (`serve`) gets it once the request is decoded
// and admitted, and finishes it, at once or later from any thread, exactly
// once. The answer is serialized where it is finished and sent, charged at
// the door, on the call's loop.
template <typename Request, typename Response>
class UnaryCall final : public H2DoorCall {
 public:
  // What a method does with a decoded request.
  using Serve = std::function<void(UnaryCall*)>;
  // The handler of the method, which the dispatcher names once
  // (CallDispatcher::Add).
  static CallFactory Factory(Serve serve) {
    auto shared = std::make_shared<const Serve>(std::move(serve));
    return [shared](H2Start start) {
      (new UnaryCall(std::move(start), shared.get()))->Open();
    };
  }

  const Request& request() const { return *request_; }
  // How the door admitted it: serve it, or answer GreptimeDB's not-leader
  // header; and the flow-state term of the leadership it was admitted under.
  const Admission& admission() const { return admission_; }
  Response* response() { return response_; }
  // peer() (H2DoorCall): the client's address ("ipv4:10.0.0.1:5000").
  // Whether the client cancelled the call or its deadline passed: work for
  // it is wasted.
  bool cancelled() const { return cancelled_.load(); }
  // The encoding the client takes a compressed answer in (kNone: plain
  // only), from its grpc-accept-encoding (answer_encoding.h).
  Compression answer_compression() const { return answer_compression_; }
  // Makes `bytes` the answer instead of response(): an answer built without
  // the message (cached encodings), compressed by `compression` (which the
  // client must accept). Call before Finish(OkStatus()).
  void SetResponseBytes(SharedPieces bytes,
                        Compression compression = Compression::kNone) {
    raw_ = std::move(bytes);
    raw_compression_ = compression;
    has_raw_ = true;
  }
  // Sends the response (when `status` is OK) or the error. An answer that
  // does not fit the reply budget is refused with RESOURCE_EXHAUSTED.
  void Finish(const absl::Status& status) {
    std::vector<SharedBytes> pieces;
    const Compression compression = raw_compression_;
    if (status.ok()) {
      if (has_raw_) {
        pieces = std::move(raw_);
      } else {
        auto text = std::make_shared<std::string>();
        response_->SerializeToString(text.get());
        pieces.push_back(SharedBytes::Of(std::move(text)));
      }
    }
    // The messages go where the call is finished, not on the loop.
    request_ = nullptr;
    response_ = nullptr;
    arena_.Reset();
    raw_.clear();
    OnLoop([this, status, compression,
            pieces = std::move(pieces)](H2Call* stream) mutable {
      if (stream != nullptr && !ended_) {
        absl::Status result = status;
        if (result.ok()) {
          size_t bytes = 0;
          for (const SharedBytes& p : pieces) bytes += p.bytes.size();
          result = Charge(bytes);
          if (result.ok()) stream->Send(std::move(pieces), compression);
          // A large answer stays endable by the ledger until it is written.
          if (result.ok() && limits_.door->Watches(bytes)) {
            if (CallLedger::Ticket* t = ticket()) t->Touch();
            Attach().IgnoreError();
          }
        }
        End(result, true);
      }
      Release();  // The hold its method had.
    });
  }

  // AbortableCall: on the loop, behind what it queued. An answer queued but
  // not yet written is dropped so that the status goes out now.
  void Abort(const absl::Status& status) override {
    OnLoop(
        [this, status](H2Call* stream) {
          if (stream != nullptr && stream->queued() > 0) {
            Abandon(status);
          } else {
            End(status, false);
          }
        },
        /*now_if_here=*/false);
  }

 private:
  UnaryCall(H2Start start, const Serve* serve)
      : H2DoorCall(std::move(start)),
        serve_(serve),
        answer_compression_(
            AnswerCompressionFor(call_->head().accept_encoding)),
        request_(google::protobuf::Arena::CreateMessage<Request>(&arena_)),
        response_(google::protobuf::Arena::CreateMessage<Response>(&arena_)) {}

  void OnMessage(H2Call* stream, Compression compression,
                 std::string message) override {
    if (request_came_once_) {
      // gRPC ends a unary call that carries a second request.
      End(absl::InternalError("a unary call carried a second request message"),
          false);
      return;
    }
    request_came_once_ = true;
    RequestCame();
    if (absl::Now() >= stream->client_deadline()) {
      End(absl::DeadlineExceededError("deadline exceeded"), false);
      return;
    }
    absl::StatusOr<Admission> admission =
        DecodeAndAdmit(compression, message, request_);
    if (!admission.ok()) {
      End(admission.status(), true);
      return;
    }
    admission_ = *admission;
    Hold();  // Until Finish() has run on the loop.
    // Its end, or a second message (an error), is read meanwhile.
    stream->Next();
    (*serve_)(this);
  }
  void OnHalfClose(H2Call*) override {
    if (request_came_once_) return;  // The request, then the end: as due.
    End(absl::InternalError("the call carried no request message"), false);
  }
  void OnEnded() override { cancelled_.store(true); }

  const Serve* const serve_;            // The method; the dispatcher's.
  const Compression answer_compression_;  // What the client accepts.
  std::atomic<bool> cancelled_{false};  // The stream is over.
  google::protobuf::Arena arena_;       // Holds both messages.
  Request* request_;                    // On arena_; null once answered.
  Response* response_;                  // On arena_; null once answered.
  Admission admission_;                 // Set before the method runs.
  SharedPieces raw_;                    // SetResponseBytes()'s answer,
  Compression raw_compression_ = Compression::kNone;  // compressed so.
  bool has_raw_ = false;
  bool request_came_once_ = false;  // Loop thread: its request came.
};

// Runs `read(request, response)` (returning an absl::Status) for `call` on
// `reads` and finishes the call with it. A call cancelled while it waited
// (the client gave up, its deadline passed) costs nothing more: it finishes
// with CANCELLED without reading. A full queue finishes it with
// RESOURCE_EXHAUSTED.
template <typename Request, typename Response, typename Read>
void ScheduleRead(ReadExecutor* reads, ReadCost cost,
                  UnaryCall<Request, Response>* call, Read read) {
  ReadExecutor::Owner owner;
  if (CallLedger::Ticket* ticket = call->ticket()) owner.host = ticket->host();
  owner.cancelled = [call] { return call->cancelled(); };
  owner.refuse = [call](const absl::Status& status) { call->Finish(status); };
  absl::Status queued = reads->Schedule(
      cost,
      [call, read] {
        if (call->cancelled()) {
          call->Finish(
              absl::CancelledError("the call was cancelled while it waited"));
          return;
        }
        call->Finish(read(call->request(), call->response()));
      },
      std::move(owner));
  if (!queued.ok()) call->Finish(queued);
}

}  // namespace metasrv::server

#endif  // METASRV_SERVER_RPC_UNARY_CALL_H_
