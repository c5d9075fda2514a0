// One call the server accepted, whatever its method: its context, the
// C++ async stream over it, and what keeps it alive.
//
// Every method is served through one generic async service on the server's
// own completion queue (cq_poller.h): no callback service, whose two fixed
// polling threads hand each message over between them. A method's logic is
// a CallHandler; it moves messages with the C++ async API on stream(), or
// with core batches on c_call() where fewer completions per message matter
// (the heartbeat stream).
#ifndef METASRV_SERVER_RPC_SERVER_CALL_H_
#define METASRV_SERVER_RPC_SERVER_CALL_H_

#include <grpc/grpc.h>
#include <grpcpp/alarm.h>
#include <grpcpp/generic/async_generic_service.h>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/ops/call_metrics.h"
#include "server/ops/metrics.h"
#include "server/rpc/grpc151_internals.h"
#include "server/rpc/method_table.h"
#include "server/rpc/call_ledger.h"

namespace metasrv::server {

class ServerCall;

// What a method does with an accepted call. Every callback runs on a poller
// thread (or, for Finish()-like calls a handler makes itself, on whatever
// thread makes them) and must not block.
class CallHandler {
 public:
  virtual ~CallHandler() = default;
  // The call was accepted: start reading it. Called once.
  virtual void Start() = 0;
  // The client cancelled it (or its deadline passed, or the server is
  // shutting down): operations in flight fail. At most once.
  virtual void OnCancel() {}
  // Nothing is in flight and nothing more will be called; the handler is
  // deleted right after.
  virtual void OnDone() {}
};

// Makes the handler of an accepted call of one method.
using CallHandlerFactory =
    std::function<std::unique_ptr<CallHandler>(ServerCall*)>;

// An operation's tag, bound to a handler's method. Start the operation with
// ServerCall::Begin(&op) (or StartBatch): the call stays alive until it
// completes, and its completion runs `(handler->*fn)(ok)`.
template <typename Handler>
class CallOp final : public CqTag {
 public:
  using Fn = void (Handler::*)(bool ok);
  CallOp(Handler* handler, Fn fn) : handler_(handler), fn_(fn) {}
  void Complete(bool ok) override;

 private:
  Handler* const handler_;  // Whose method runs; owned by the call.
  const Fn fn_;             // The method.
};

// The call objects alive, refused ones too: what the shutdown waits for
// (the ledger, call_ledger.h, counts open calls). One per dispatcher.
// Thread-safe.
class CallBook {
 public:
  // Told, with its peer, of each served call its client cancelled before
  // its request came (a rapid reset); set before calls come.
  std::function<void(const std::string& peer)> on_early_reset;
  // Calls accepted and not yet deleted.
  int64_t live() const ABSL_LOCKS_EXCLUDED(mu_);
  // Waits until none is, at most until `deadline`; returns whether none is.
  bool WaitForNone(absl::Time deadline) const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  friend class ServerCall;
  friend class H2DoorCall;
  void Enter() ABSL_LOCKS_EXCLUDED(mu_);
  void Leave() ABSL_LOCKS_EXCLUDED(mu_);

  mutable absl::Mutex mu_;                 // Guards live_.
  int64_t live_ ABSL_GUARDED_BY(mu_) = 0;  // Calls alive.
};

// Thread safety: the accessors and Begin() from any thread; the handler
// serializes the operations it starts (gRPC takes one batch at a time per
// call).
class ServerCall final : public AbortableCall {
 public:
  // A call waiting to be accepted: RequestCall() takes context() and
  // stream(). `book` outlives the call.
  explicit ServerCall(CallBook* book);
  ServerCall(const ServerCall&) = delete;
  ServerCall& operator=(const ServerCall&) = delete;

  // The generic service's request for the next call: `accepted` completes
  // when one comes (ok) or the server shuts down (!ok: delete the call with
  // Discard()).
  void Request(grpc::AsyncGenericService* service,
               grpc::ServerCompletionQueue* cq, CqTag* accepted);
  // A call that was never accepted goes away.
  static void Discard(ServerCall* call) { delete call; }
  // The call was accepted: `handler` serves it, counted as `series` (null:
  // not counted). Starts the handler. After this the call owns itself: it
  // is deleted once the handler has started its finishing operation
  // (BeginFinish()), its last operation has completed and gRPC's
  // notification that the call is done has come. So a handler that others
  // call back (an executor, a publisher) stays alive until it finishes.
  void Serve(std::unique_ptr<CallHandler> handler, CallSeries* series);

  grpc::GenericServerContext* context() { return &context_; }
  // The row of the method it calls, set by the dispatcher before its
  // handler is made; null for a method nobody serves.
  const MethodRow* row() const { return row_; }
  void SetRow(const MethodRow* row) { row_ = row; }
  // The completion queue its operations complete on (alarms too).
  grpc::ServerCompletionQueue* cq() const { return cq_; }
  // Its place in the peer ledger, charged by the door when it was accepted;
  // given back when the call is deleted. Null when no door charged it.
  std::optional<CallLedger::Ticket>* mutable_ticket() { return &ticket_; }
  CallLedger::Ticket* ticket() {
    return ticket_.has_value() ? &*ticket_ : nullptr;
  }
  grpc::GenericServerAsyncReaderWriter* stream() { return &stream_; }
  grpc_call* c_call() { return context_.c_call(); }
  // "/package.Service/Method".
  const std::string& method() const { return context_.method(); }
  // The client's address as gRPC gives it ("ipv4:10.0.0.1:5000"), kept
  // by the dispatcher when the call came (gRPC forgets it once the call is
  // done).
  const std::string& peer() const { return peer_; }
  void KeepPeer() { peer_ = context_.peer(); }
  // Whether gRPC said the call was cancelled (see CallHandler::OnCancel).
  bool cancelled() const { return cancelled_.load(); }
  // AbortableCall: cancels the call (its client sees CANCELLED). The door
  // attaches the call so until its request arrives (an idle call the
  // ledger may end); a stream shape attaches itself instead.
  void Abort(const absl::Status&) override {
    server_cancelled_.store(true, std::memory_order_relaxed);
    context_.TryCancel();
  }

  // Holds the call for an operation about to start with `op` as its tag;
  // returns the tag for the C++ async API.
  void* Begin(CqTag* op);
  // Starts a core batch completing with `op` (held as Begin() holds it).
  // Anything but GRPC_CALL_OK is a bug: the batch did not start.
  grpc_call_error StartBatch(const grpc_op* ops, size_t count, CqTag* op);
  // An operation begun with Begin()/StartBatch() completed.
  void Release();
  // The door's deadline for the call's first request message: unless the
  // handler says RequestArrived() by `deadline`, the call is cancelled
  // (counted in `metrics` and finishing DEADLINE_EXCEEDED), so that half a
  // call (HEADERS, never a request) holds nothing for long. Call at most
  // once, before Serve().
  void ArmRequestDeadline(absl::Time deadline, Metrics* metrics);
  // The handler's read of the first request completed (whether or not it
  // got one): the deadline no longer applies. False when it had passed
  // first: the call was cancelled, and the handler should finish it. Cheap
  // after the first call; true when no deadline was armed.
  // A request message came (the shapes say so when a read brings one):
  // the call was not reset before its request.
  void GotRequest() { got_request_.store(true, std::memory_order_relaxed); }
  bool RequestArrived() {
    if (request_phase_.load(std::memory_order_acquire) != kWaiting) {
      return request_phase_.load(std::memory_order_acquire) != kTimedOut;
    }
    if (!SettleRequestDeadline()) return false;
    // In progress: no longer idle (a stream shape attached itself anyway).
    // Never under the ledger's lock: only a handler's own read says so.
    if (ticket_.has_value()) ticket_->Detach(this);
    return true;
  }

  // Begin() for the operation that sends the call's status (after which the
  // handler starts no other): the handler's own hold on the call ends here,
  // once. The call is never deleted inside this (the operation holds it
  // until it completes, on a poller), so a caller may hold a lock that the
  // handler's OnDone() takes (a registry aborting its streams).
  void* BeginFinish(CqTag* op) {
    void* tag = Begin(op);
    // Finished before its request came (refused at the door): no deadline.
    if (request_phase_.load(std::memory_order_acquire) == kWaiting) {
      SettleRequestDeadline();
    }
    if (!finish_started_.exchange(true)) Release();
    return tag;
  }

  // The status code the call is about to finish with, for its metrics. The
  // first code counts: the handler's, or CANCELLED if gRPC said the call
  // was cancelled before the handler said anything (the client gave up; no
  // status the handler sends later reaches it).
  void Finishing(int code) {
    int unset = kNoCode;
    code_.compare_exchange_strong(unset, code);
  }

 private:
  // gRPC's notification that the call is done, requested before it came.
  class DoneTag final : public CqTag {
   public:
    explicit DoneTag(ServerCall* call) : call_(call) {}
    void Complete(bool ok) override;

   private:
    ServerCall* const call_;  // Its call.
  };

  // The request deadline's alarm went off (fired) or was cancelled.
  class RequestDueTag final : public CqTag {
   public:
    explicit RequestDueTag(ServerCall* call) : call_(call) {}
    void Complete(bool fired) override;

   private:
    ServerCall* const call_;  // Its call.
  };
  // Where the call is with its request deadline.
  enum RequestPhase { kNoDeadline, kWaiting, kArrived, kTimedOut };
  // Leaves kWaiting for kArrived (cancelling the alarm) unless the deadline
  // won; returns whether it did.
  bool SettleRequestDeadline();

  ~ServerCall() override;

  CallBook* const book_;                       // Live calls, metrics; borrowed.
  grpc::ServerCompletionQueue* cq_ = nullptr;  // Set by Request().
  const MethodRow* row_ = nullptr;             // Set by SetRow().
  grpc::GenericServerContext context_;         // The call's context.
  grpc::GenericServerAsyncReaderWriter stream_;  // The call's stream.
  DoneTag done_;                                 // gRPC's "call done".
  std::unique_ptr<CallHandler> handler_;         // The method's logic.
  // Begun operations in flight, plus one until the done notification came,
  // one while Serve() runs and one until BeginFinish().
  std::atomic<int> refs_{3};
  std::atomic<bool> finish_started_{false};  // BeginFinish() was called.
  std::atomic<bool> cancelled_{false};       // The done notification said so.
  std::atomic<bool> got_request_{false};     // GotRequest() was called.
  // The server cancelled it (its request deadline, the ledger): not a
  // client's reset.
  std::atomic<bool> server_cancelled_{false};
  std::string peer_;                         // Set by KeepPeer().
  // Guards the handing over of the handler and of its OnCancel(): whichever
  // of Serve() and the done notification comes second tells it.
  absl::Mutex mu_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;      // Start() returned.
  bool cancel_told_ ABSL_GUARDED_BY(mu_) = false;  // OnCancel() was called.
  static constexpr int kNoCode = -1;               // No code said yet.
  std::atomic<int> code_{kNoCode};                 // The first code said.
  std::optional<SelfCountedCall> counted_;  // Its call metrics, once served.
  RequestDueTag request_due_{this};         // The request deadline's tag.
  grpc::Alarm request_alarm_;               // Set by ArmRequestDeadline().
  Metrics* deadline_metrics_ = nullptr;     // Where a timeout is counted.
  std::atomic<int> request_phase_{kNoDeadline};  // A RequestPhase.
  // Its place in the ledger; released first when the call is deleted.
  std::optional<CallLedger::Ticket> ticket_;
};

template <typename Handler>
void CallOp<Handler>::Complete(bool ok) {
  ServerCall* call = handler_->call();
  (handler_->*fn_)(ok);
  call->Release();
}

}  // namespace metasrv::server

#endif  // METASRV_SERVER_RPC_SERVER_CALL_H_
