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

#include <functional>
#include <memory>
#include <utility>

#include "absl/status/status.h"
#include "server/rpc/call_door.h"
#include "server/rpc/call_handlers.h"
#include "server/rpc/method_table.h"
#include "server/rpc/read_executor.h"
#include "server/rpc/raw_request.h"
#include "server/rpc/shared_bytes.h"

namespace metasrv::server {

// One unary call, as a method sees it. Its method
// (`serve`) gets it once the request is decoded and admitted, and finishes
// it, at once or later from any thread, exactly once.
template <typename Request, typename Response>
class UnaryCall {
 public:
  // What a method does with a decoded request.
  using Serve = std::function<void(UnaryCall*)>;
  // The handler of the method, which the dispatcher names once
  // (CallDispatcher::Add). Defined below the transport's shape.
  static MethodHandlers Factory(Serve serve);

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
  virtual void SetResponseBytes(SharedPieces bytes) = 0;
  // Sends the response (when `status` is OK) or the error. An answer that
  // does not fit the reply budget is refused with RESOURCE_EXHAUSTED.
  virtual void Finish(const absl::Status& status) = 0;

 protected:
  UnaryCall()
      : request_(google::protobuf::Arena::CreateMessage<Request>(&arena_)),
        response_(google::protobuf::Arena::CreateMessage<Response>(&arena_)) {}
  // Decodes `raw` and admits the call by its method's leader policy.
  absl::Status DecodeAndAdmit(const RawRequest& raw, const CallDoor& door,
                              Method method) {
    if (absl::Status decoded = raw.DecodeInto(request_); !decoded.ok()) {
      return decoded;
    }
    absl::StatusOr<Admission> admitted = door.AdmitLeader(method);
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
class H2UnaryCall;

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

// The transport's shape needs the base above; the factory below needs it.
#include "server/rpc/h2_unary_call.h"  // IWYU pragma: export

namespace metasrv::server {

template <typename Request, typename Response>
MethodHandlers UnaryCall<Request, Response>::Factory(Serve serve) {
  auto shared = std::make_shared<const Serve>(std::move(serve));
  return [shared](H2Start start) {
    H2UnaryCall<Request, Response>::Start(std::move(start), shared.get());
  };
}

}  // namespace metasrv::server

#endif  // METASRV_SERVER_RPC_UNARY_CALL_H_
