// The unary shape on the nghttp2 transport: the request decoded into an
// arena and admitted by its method's leader policy; the method finishes it
// from any thread, once; the answer serialized where it is finished and
// sent, charged at the door, on the call's loop.
#ifndef METASRV_SERVER_RPC_H2_UNARY_CALL_H_
#define METASRV_SERVER_RPC_H2_UNARY_CALL_H_

#include <atomic>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "server/rpc/h2_door_call.h"
#include "server/rpc/unary_call.h"

namespace metasrv::server {

template <typename Request, typename Response>
class H2UnaryCall final : public UnaryCall<Request, Response>,
                          public H2DoorCall {
 public:
  using Serve = typename UnaryCall<Request, Response>::Serve;

  // Takes the call the door let in; it owns itself.
  static void Start(H2Start start, const Serve* serve) {
    auto* call = new H2UnaryCall(std::move(start), serve);
    H2Call* stream = call->call_;
    if (absl::Status begun = call->Begin(); !begun.ok()) {
      call->End(begun, true);
      return;
    }
    stream->Next();
  }

  const std::string& peer() const override { return H2DoorCall::peer(); }
  bool cancelled() const override { return cancelled_.load(); }
  // The ledger ends it: an answer still queued is dropped, so that what it
  // holds is free at once.
  void Abort(const absl::Status& status) override {
    // Never at once: the ledger's lock is held, and ending gives back to it.
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
  void SetResponseBytes(SharedPieces bytes) override {
    raw_ = std::move(bytes);
    has_raw_ = true;
  }
  void Finish(const absl::Status& status) override {
    std::vector<SharedBytes> pieces;
    if (status.ok()) {
      if (has_raw_) {
        pieces = std::move(raw_);
      } else {
        auto text = std::make_shared<std::string>();
        this->response_->SerializeToString(text.get());
        pieces.push_back(SharedBytes::Of(std::move(text)));
      }
    }
    this->DropMessages();
    raw_.clear();
    OnLoop([this, status, pieces = std::move(pieces)](H2Call* stream) mutable {
      if (stream != nullptr && !ended_) {
        absl::Status result = status;
        if (result.ok()) {
          size_t bytes = 0;
          for (const SharedBytes& p : pieces) bytes += p.bytes.size();
          result = Charge(bytes);
          if (result.ok()) stream->Send(std::move(pieces));
          // A large answer the client does not read may be ended for
          // another host (Abort drops it).
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

 private:
  H2UnaryCall(H2Start start, const Serve* serve)
      : H2DoorCall(std::move(start)), serve_(serve) {}

  void OnMessage(H2Call* stream, bool compressed,
                 std::string message) override {
    RequestCame();
    if (compressed && (stream->head().encoding.empty() ||
                       stream->head().encoding == "identity")) {
      End(absl::InternalError("a compressed message without grpc-encoding"),
          false);
      return;
    }
    if (absl::Status admitted = this->DecodeAndAdmit(
            RawRequest(&message, limits_.max_request_bytes), *limits_.door,
            row_->method);
        !admitted.ok()) {
      End(admitted, true);
      return;
    }
    Hold();  // Until Finish() has run on the loop.
    (*serve_)(this);
  }
  void OnHalfClose(H2Call*) override {
    End(absl::InternalError("the call carried no request message"), false);
  }
  void OnEnded() override { cancelled_.store(true); }

  const Serve* const serve_;  // The method; the dispatcher's.
  std::atomic<bool> cancelled_{false};  // The stream is over.
  SharedPieces raw_;          // SetResponseBytes()'s answer.
  bool has_raw_ = false;
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_RPC_H2_UNARY_CALL_H_
