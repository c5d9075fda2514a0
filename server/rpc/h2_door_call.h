// What the three shapes share on the nghttp2 transport: a call the door let
// in, on its loop thread. It keeps the call's ledger ticket, its request
// deadline (--request_timeout, then the client's own), its answers' charge
// at the door, its metrics, and its end: by its method, by the ledger from
// any thread (AbortableCall: a step-down, silence, another host's share),
// by its client or by the transport (an answer not written in time).
//
// Lifetime: the call owns itself. It is deleted once its stream is closed
// and every hold (Hold()) is released; a task posted to its loop for it runs
// only while it lives (OnLoop()).
#ifndef METASRV_SERVER_RPC_H2_DOOR_CALL_H_
#define METASRV_SERVER_RPC_H2_DOOR_CALL_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "server/ops/call_metrics.h"
#include "server/rpc/call_start.h"
#include "server/rpc/h2_call.h"
#include "server/rpc/method_table.h"
#include "server/rpc/raw_request.h"

namespace metasrv::server {

class H2DoorCall : public CallEvents, public virtual AbortableCall {
 public:
  // AbortableCall: from any thread, under the ledger's lock. The call ends
  // with `status` on its loop, behind what it has queued.
  void Abort(const absl::Status& status) override;

  const std::string& peer() const { return peer_; }
  CallLedger::Ticket* ticket() {
    return ticket_.has_value() ? &*ticket_ : nullptr;
  }

 protected:
  explicit H2DoorCall(H2Start start);
  ~H2DoorCall() override;

  // The one start of every shape, on the loop thread, once, right after
  // its factory made it: Begin(), then the shape's OnOpen(), then its
  // first request is read. An error ends the call with it (GreptimeDB's
  // metadata included).
  void Open();
  // The shape's own start, after Begin(): an error ends the call.
  virtual absl::Status OnOpen() { return absl::OkStatus(); }
  // Loop thread: takes the call's events, arms its request deadline and
  // lets the ledger end it while it is idle. An error: end it with that.
  absl::Status Begin();
  // Loop thread: its first request came; the client's deadline applies now
  // and the ledger no longer ends it as idle.
  void RequestCame();
  // The one decode-and-admit step of every shape's request: `message`
  // (compressed as the transport named it) decoded into `request` by its
  // codec (DecodeMessage, raw_request.h), inflated at most to the call's
  // bound and within its host's share, then admitted by the method's
  // leader policy. The admission, or the error to end the call with.
  template <typename Request>
  absl::StatusOr<Admission> DecodeAndAdmit(Compression compression,
                                           const std::string& message,
                                           Request* request) const {
    if (absl::Status decoded = DecodeMessage(
            RawRequest(&message, compression, limits_.max_request_bytes,
                       call_->inflate_gate()),
            request);
        !decoded.ok()) {
      return decoded;
    }
    return limits_.door->AdmitLeader(row_->method);
  }
  // The ledger may end it from now on, whatever it does (a stream; loop
  // thread). An error if the ledger refused.
  absl::Status Attach();
  // Loop thread: ends the call with `status`, with GreptimeDB's error
  // trailers when `greptime`; once.
  void End(const absl::Status& status, bool greptime);
  // Loop thread: drops the answer queued and sends `status` now, whatever
  // the windows; its charge is given back at once.
  void Abandon(const absl::Status& status);
  // Charges an answer of `bytes` at the door (loop thread); an error if it
  // does not fit. Given back once its bytes left (OnDrained) or the stream
  // ended.
  absl::Status Charge(uint64_t bytes);
  // Runs `task` on the call's loop, if the call still lives then: at once
  // when called there and `now_if_here`, else soon. Any thread.
  void OnLoop(absl::AnyInvocable<void(H2Call*)> task, bool now_if_here = true);
  // Keeps the call alive past its stream's end until Release().
  void Hold() { refs_.fetch_add(1, std::memory_order_relaxed); }
  void Release();

  // CallEvents.
  // Its answers left: their charge at the door is given back.
  void OnDrained(H2Call* call) override;
  void OnDeadline(H2Call* call) override;
  void OnClosed(H2Call* call) override;
  // The stream is over (loop thread): the shape's last word.
  virtual void OnEnded() {}

  H2Call* call_;            // Null once its stream is closed.
  const MethodRow* const row_;
  const CallLimits limits_;
  bool ended_ = false;      // End() was called (loop thread).
  // Its stream was reset because an answer was not written in time.
  bool stalled_ = false;

 private:
  // What a task posted to the loop finds: the call, while it lives.
  struct Anchor {
    H2DoorCall* self;
  };

  H2Loop* const loop_;
  const std::string peer_;
  std::optional<CallLedger::Ticket> ticket_;
  CallBook* const book_;  // Counts it while it lives; may be null.
  SelfCountedCall counted_;
  std::shared_ptr<Anchor> anchor_;
  bool idle_attached_ = false;  // Attached until its request came.
  bool request_came_ = false;
  std::atomic<bool> closed_{false};  // Its stream is over.
  std::atomic<uint64_t> held_{0};    // Answer bytes charged at the door.
  std::atomic<int> refs_{1};       // The stream, and each Hold().
};

// A call finished with a status, reading nothing: a method nobody serves,
// or a call the door refused, at once or at `answer_at` (a wrong admin
// token's answer, delayed; idle meanwhile, so that the ledger may end it).
class H2Refused final : public H2DoorCall {
 public:
  static void Start(H2Start start, absl::Status status, bool greptime,
                    absl::Time answer_at);

 private:
  H2Refused(H2Start start, absl::Status status, bool greptime)
      : H2DoorCall(std::move(start)),
        status_(std::move(status)),
        greptime_(greptime) {}
  void OnMessage(H2Call*, Compression, std::string) override {}
  void OnHalfClose(H2Call*) override {}
  void OnDeadline(H2Call*) override { End(status_, greptime_); }

  const absl::Status status_;
  const bool greptime_;
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_RPC_H2_DOOR_CALL_H_
