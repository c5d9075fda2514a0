// The bidirectional stream shape: one answer per request, in order, one at
// a time. A method's logic is a StreamCall::Handler that sees each request
// as bytes (RawRequest, bounded by its method) admitted by its method's
// leader policy, and fills the answer; the shape owns the rest of the call
// protocol: the admission of each request, the request deadline, the reply
// charge through the door,
// the status sent exactly once, and ending the stream when the ledger says
// (AbortableCall: a step-down, silence, another host's fair share) behind
// any answer in flight.
#ifndef METASRV_SERVER_RPC_STREAM_CALL_H_
#define METASRV_SERVER_RPC_STREAM_CALL_H_

#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "server/rpc/call_handlers.h"
#include "server/rpc/raw_request.h"

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

// A bidi stream of one answer per request, as its method sees it.
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
    // One request, admitted as `admission` says (a leader policy that
    // refuses ended the stream before). `answer` is the same message every
    // time: the handler sets it whole.
    virtual StreamStep OnRequest(const RawRequest& request,
                                 const Admission& admission,
                                 Answer* answer) = 0;
    // The call is over: nothing more is called.
    virtual void OnClose() {}
  };
  // Makes the logic of one call.
  using MakeHandler = std::function<std::unique_ptr<Handler>()>;

  // The handler of the method, for the dispatcher. Defined below the
  // transport's shape.
  static MethodHandlers Factory(MakeHandler make);

  virtual ~StreamCall() = default;
  // The client's address ("ipv4:10.0.0.1:5000").
  virtual const std::string& peer() const = 0;
  // Its client was told to send a request every `interval` and to retry
  // after `retry` (a handshake answer): from now on the stream is silent,
  // and ended by the door's sweep, past CallDoor::SilenceLimitFor of them.
  virtual void Told(absl::Duration interval, absl::Duration retry) = 0;
};

template <typename Answer>
class H2StreamCall;

}  // namespace metasrv::server

// The transport's shape needs the base above; the factory below needs it.
#include "server/rpc/h2_stream_call.h"  // IWYU pragma: export

namespace metasrv::server {

template <typename Answer>
MethodHandlers StreamCall<Answer>::Factory(MakeHandler make) {
  auto shared = std::make_shared<const MakeHandler>(std::move(make));
  return [shared](H2Start start) {
    H2StreamCall<Answer>::Start(std::move(start), (*shared)());
  };
}

}  // namespace metasrv::server

#endif  // METASRV_SERVER_RPC_STREAM_CALL_H_
