// The bidirectional stream shape: one answer per request, in order, one at
// a time. Each request is decoded by its method's codec into the call's
// Request (DecodeMessage, raw_request.h: protobuf's parse, or a codec's own
// overload, as heartbeat_request.h's) within its method's bound, and
// admitted by its method's leader policy; a method's logic is a
// StreamCall::Handler that sees the decoded request and fills the answer.
// The shape owns the rest of the call protocol: the request deadline, the
// reply charge through the door, the status sent exactly once, and ending
// the stream when the ledger says (AbortableCall: a step-down, silence,
// another host's fair share) behind any answer in flight.
#ifndef METASRV_SERVER_RPC_STREAM_CALL_H_
#define METASRV_SERVER_RPC_STREAM_CALL_H_

#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "server/rpc/h2_door_call.h"
#include "server/rpc/raw_request.h"
#include "spdlog/spdlog.h"

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

// A bidi stream of one answer per request, as its method sees it. It reads
// the next request only while fewer than kMaxQueued answers wait to leave.
template <typename Request, typename Answer>
class StreamCall final : public H2DoorCall {
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
    // One request, decoded into `request` (the call's, reused: the handler
    // may take from it) and admitted as `admission` says (a request that
    // does not decode, or a leader policy that refuses, ended the stream
    // before). `answer` is the same message every time: the handler sets
    // it whole.
    virtual StreamStep OnRequest(Request* request, const Admission& admission,
                                 Answer* answer) = 0;
    // The call is over: nothing more is called.
    virtual void OnClose() {}
  };
  // Makes the logic of one call, and the request its messages are decoded
  // into.
  using MakeHandler = std::function<std::unique_ptr<Handler>()>;
  using MakeRequest = std::function<std::unique_ptr<Request>()>;

  // The handler of the method, for the dispatcher. Without `make_request`
  // each call decodes into a default-made Request.
  static CallFactory Factory(MakeHandler make,
                             MakeRequest make_request = nullptr) {
    if constexpr (std::is_default_constructible_v<Request>) {
      if (make_request == nullptr) {
        make_request = [] { return std::make_unique<Request>(); };
      }
    }
    auto makers = std::make_shared<const std::pair<MakeHandler, MakeRequest>>(
        std::move(make), std::move(make_request));
    return [makers](H2Start start) {
      (new StreamCall(std::move(start), makers->first(), makers->second()))
          ->Open();
    };
  }

  // peer() (H2DoorCall): the client's address ("ipv4:10.0.0.1:5000").
  // Its client was told to send a request every `interval` and to retry
  // after `retry` (a handshake answer): from now on the stream is silent,
  // and ended by the door's sweep, past CallDoor::SilenceLimitFor of them.
  void Told(absl::Duration interval, absl::Duration retry) {
    if (ticket() == nullptr) return;
    ticket()->SetTold(interval, limits_.door->SilenceLimitFor(interval, retry));
  }

 private:
  StreamCall(H2Start start, std::unique_ptr<Handler> handler,
             std::unique_ptr<Request> request)
      : H2DoorCall(std::move(start)),
        handler_(std::move(handler)),
        request_(std::move(request)) {}

  absl::Status OnOpen() override {
    absl::Status attached = Attach();
    return attached.ok() ? handler_->OnOpen(this) : attached;
  }

  void OnMessage(H2Call* stream, Compression compression,
                 std::string message) override {
    RequestCame();
    if (CallLedger::Ticket* t = ticket()) t->Touch();
    // Each request is admitted as the door admits a call: a heartbeat
    // merges under the term it was admitted with.
    absl::StatusOr<Admission> admitted =
        DecodeAndAdmit(compression, message, request_.get());
    if (!admitted.ok()) {
      spdlog::debug("{} stream from {} ended: {}", row_->path, peer(),
                    admitted.status().ToString());
      End(admitted.status(), true);
      return;
    }
    const StreamStep step =
        handler_->OnRequest(request_.get(), *admitted, &answer_);
    switch (step.kind()) {
      case StreamStep::Kind::kEnd:
        End(step.status(), true);
        return;
      case StreamStep::Kind::kAnswerThenEnd:
        stream->Send(
            std::make_shared<const std::string>(answer_.SerializeAsString()));
        End(step.status(), false);
        return;
      case StreamStep::Kind::kAnswer:
        break;
    }
    auto bytes = std::make_shared<std::string>();
    answer_.SerializeToString(bytes.get());
    if (absl::Status taken = Charge(bytes->size()); !taken.ok()) {
      End(taken, true);
      return;
    }
    stream->Send(std::move(bytes));
    // Back-pressure: while kMaxQueued answers wait for the client's window,
    // its next request stays in flow control, not in our memory.
    if (stream->queued_answers() < kMaxQueued) {
      stream->Next();
    } else {
      awaiting_drain_ = true;
    }
  }
  void OnDrained(H2Call* stream) override {
    H2DoorCall::OnDrained(stream);
    if (awaiting_drain_) {
      awaiting_drain_ = false;
      stream->Next();
    }
  }
  void OnHalfClose(H2Call*) override { End(absl::OkStatus(), false); }
  void OnEnded() override { handler_->OnClose(); }

  // Answers queued on the stream at most before it stops reading.
  static constexpr size_t kMaxQueued = 2;

  std::unique_ptr<Handler> handler_;  // The method's logic.
  std::unique_ptr<Request> request_;  // Decoded into, per request.
  Answer answer_;                     // Reused per answer.
  bool awaiting_drain_ = false;  // The next request waits for OnDrained.
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_RPC_STREAM_CALL_H_
