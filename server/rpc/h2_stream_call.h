// The bidi shape on the nghttp2 transport: one answer per request, in
// order, all on the call's loop; each answer charged at the door until its
// bytes left; the stream attached to its ledger entry for its whole life
// (a step-down, silence or another host's share ends it behind what is
// queued).
#ifndef METASRV_SERVER_RPC_H2_STREAM_CALL_H_
#define METASRV_SERVER_RPC_H2_STREAM_CALL_H_

#include <memory>
#include <string>
#include <utility>

#include "server/rpc/h2_door_call.h"
#include "server/rpc/stream_call.h"

namespace metasrv::server {

template <typename Answer>
class H2StreamCall final : public StreamCall<Answer>, public H2DoorCall {
 public:
  using Handler = typename StreamCall<Answer>::Handler;

  // Takes the call the door let in; it owns itself.
  static void Start(H2Start start, std::unique_ptr<Handler> handler) {
    auto* call = new H2StreamCall(std::move(start), std::move(handler));
    H2Call* stream = call->call_;
    absl::Status opened = call->Begin();
    if (opened.ok()) opened = call->Attach();
    if (opened.ok()) opened = call->handler_->OnOpen(call);
    if (!opened.ok()) {
      call->End(opened, true);
      return;
    }
    stream->Next();
  }

  const std::string& peer() const override { return H2DoorCall::peer(); }
  void Told(absl::Duration interval, absl::Duration retry) override {
    if (ticket() == nullptr) return;
    ticket()->SetTold(interval,
                      limits_.door->SilenceLimitFor(interval, retry));
  }

 private:
  H2StreamCall(H2Start start, std::unique_ptr<Handler> handler)
      : H2DoorCall(std::move(start)), handler_(std::move(handler)) {}

  void OnMessage(H2Call* stream, bool, std::string message) override {
    RequestCame();
    if (CallLedger::Ticket* t = ticket()) t->Touch();
    // Each request is admitted as the door admits a call: a heartbeat
    // merges under the term it was admitted with.
    absl::StatusOr<Admission> admitted =
        limits_.door->AdmitLeader(row_->method);
    if (!admitted.ok()) {
      End(admitted.status(), true);
      return;
    }
    const StreamStep step = handler_->OnRequest(
        RawRequest(&message, limits_.max_request_bytes), *admitted, &answer_);
    switch (step.kind()) {
      case StreamStep::Kind::kEnd:
        End(step.status(), true);
        return;
      case StreamStep::Kind::kAnswerThenEnd:
        stream->Send(std::make_shared<const std::string>(
            answer_.SerializeAsString()));
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
    stream->Next();
  }
  void OnHalfClose(H2Call*) override { End(absl::OkStatus(), false); }
  void OnEnded() override { handler_->OnClose(); }

  std::unique_ptr<Handler> handler_;  // The method's logic.
  Answer answer_;                     // Reused per answer.
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_RPC_H2_STREAM_CALL_H_
