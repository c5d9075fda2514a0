#include "server/rpc/call_dispatcher.h"

#include <grpcpp/alarm.h>
#include <grpcpp/support/status.h>

#include <algorithm>
#include <utility>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "server/ops/log_limit.h"
#include "server/rpc/grpc_status.h"
#include "server/rpc/h2_door_call.h"

namespace metasrv::server {
namespace {

// Requests for the next call kept out at once: a burst of new streams (a
// fleet reconnecting) is accepted without a round trip per call, and calls
// do not queue inside gRPC (uncharged) faster than they reach the door.
constexpr int kAcceptors = 256;

// A call finished with a status, reading nothing: a method nobody
// registered (UNIMPLEMENTED with no message, what gRPC itself sends), or a
// call the door refused; after `delay` (a wrong admin token's answer), or
// at once.
class Refused final : public CallHandler {
 public:
  Refused(ServerCall* call, grpc::Status status,
          absl::Duration delay = absl::ZeroDuration())
      : call_(call),
        status_(std::move(status)),
        delay_(delay),
        due_(this, &Refused::OnDue),
        finished_(this, &Refused::OnFinished) {}
  ServerCall* call() const { return call_; }
  void Start() override {
    if (delay_ <= absl::ZeroDuration()) {
      OnDue(true);
      return;
    }
    alarm_.Set(call_->cq(), absl::ToChronoTime(absl::Now() + delay_),
               call_->Begin(&due_));
  }
  // The client gave up waiting: the answer goes now (to nobody).
  void OnCancel() override { alarm_.Cancel(); }

 private:
  void OnDue(bool) {
    call_->Finishing(status_.error_code());
    call_->stream()->Finish(status_, call_->BeginFinish(&finished_));
  }
  void OnFinished(bool) {}

  ServerCall* const call_;      // The call; owns this.
  const grpc::Status status_;   // What it finishes with.
  const absl::Duration delay_;  // Before it does.
  grpc::Alarm alarm_;           // Set when there is a delay.
  CallOp<Refused> due_;         // The delay passed (or was cut short).
  CallOp<Refused> finished_;    // Its status sent.
};

}  // namespace

class CallDispatcher::Acceptor final : public CqTag {
 public:
  Acceptor(CallDispatcher* dispatcher, grpc::ServerCompletionQueue* cq)
      : dispatcher_(dispatcher), cq_(cq) {}
  ~Acceptor() override {
    if (waiting_ != nullptr) ServerCall::Discard(waiting_);
  }

  // Asks for the next call.
  void Request() {
    waiting_ = new ServerCall(&dispatcher_->book_);
    waiting_->Request(&dispatcher_->service_, cq_, this);
  }

  void Complete(bool ok) override {
    if (!ok) {
      // The server is shutting down: no call came, none will.
      ServerCall::Discard(waiting_);
      waiting_ = nullptr;
      return;
    }
    ServerCall* accepted = waiting_;
    Request();  // The next, before serving this one.
    dispatcher_->Dispatch(accepted);
  }

 private:
  CallDispatcher* const dispatcher_;       // Whose calls; borrowed.
  grpc::ServerCompletionQueue* const cq_;  // Where calls complete.
  ServerCall* waiting_ = nullptr;          // The call requested; owned.
};

// Sweeps the door every period on an alarm, until stopped.
class CallDispatcher::Sweeper final : public CqTag {
 public:
  Sweeper(CallDoor* door, grpc::ServerCompletionQueue* cq,
          absl::Duration period)
      : door_(door), cq_(cq), period_(period) {}

  void Arm() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    if (stopped_) return;
    armed_ = true;
    alarm_.Set(cq_, absl::ToChronoTime(absl::Now() + period_), AsTag());
  }
  void Complete(bool fired) override {
    {
      absl::MutexLock lock(&mu_);
      armed_ = false;
      if (stopped_) return;
    }
    if (fired) door_->Sweep();
    Arm();
  }
  void Stop() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    stopped_ = true;
    if (armed_) alarm_.Cancel();
    mu_.Await(absl::Condition(
        +[](bool* armed) { return !*armed; }, &armed_));
  }

 private:
  CallDoor* const door_;                   // What is swept; borrowed.
  grpc::ServerCompletionQueue* const cq_;  // Where the alarm goes off.
  const absl::Duration period_;            // Between sweeps.
  absl::Mutex mu_;                         // Guards the fields below.
  grpc::Alarm alarm_ ABSL_GUARDED_BY(mu_);
  bool armed_ ABSL_GUARDED_BY(mu_) = false;    // The alarm is set.
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;  // StopSweeping() was called.
};

CallDispatcher::CallDispatcher(CallMetrics* metrics, CallDoor* door)
    : metrics_(metrics), door_(door) {
  if (metrics_ != nullptr) {
    // One series for every unregistered method: a client cannot make new
    // series by making up names.
    unknown_series_ =
        metrics_->For("/unknown/unknown", CallMetrics::Type::kUnary);
  }
}

CallDispatcher::~CallDispatcher() = default;

void CallDispatcher::SetConnectionCloser(
    std::function<bool(const std::string&)> close) {
  if (door_ == nullptr) return;
  book_.on_early_reset = [door = door_,
                          close = std::move(close)](const std::string& peer) {
    if (!door->ResetEarly(peer) || !close(peer)) return;
    LogLimited(spdlog::level::warn, "rapid_reset", door->ledger().HostOf(peer),
               "closed the connection of {}: it cancelled more than {} calls "
               "in a second before sending their requests (a rapid reset)",
               peer, door->options().max_early_resets);
  };
}

void CallDispatcher::Add(Method method, Factory make) {
  const MethodRow& row = RowOf(method);
  CallSeries* series =
      metrics_ == nullptr ? nullptr : metrics_->For(row.path, row.kind);
  methods_[row.path] = Entry{&row, std::move(make), series};
}

void CallDispatcher::Start(grpc::ServerCompletionQueue* cq) {
  for (int i = 0; i < kAcceptors; ++i) {
    acceptors_.push_back(std::make_unique<Acceptor>(this, cq));
  }
  for (const std::unique_ptr<Acceptor>& acceptor : acceptors_) {
    acceptor->Request();
  }
  if (door_ != nullptr &&
      door_->options().sweep_period > absl::ZeroDuration()) {
    sweeper_ =
        std::make_unique<Sweeper>(door_, cq, door_->options().sweep_period);
    sweeper_->Arm();
  }
}

void CallDispatcher::StopSweeping() {
  if (sweeper_ != nullptr) sweeper_->Stop();
}

void CallDispatcher::Dispatch(ServerCall* call) {
  call->KeepPeer();
  auto it = methods_.find(call->method());
  if (it == methods_.end()) {
    call->Serve(std::make_unique<Refused>(
                    call, grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "")),
                unknown_series_);
    return;
  }
  const Entry& entry = it->second;
  call->SetRow(entry.row);
  if (door_ != nullptr) {
    // Charged from its first HEADERS frame, before its handler exists.
    const auto& metadata = call->context()->client_metadata();
    auto authorization = metadata.find("authorization");
    absl::Time answer_at = absl::InfinitePast();
    absl::Status entered =
        door_->Enter(*entry.row, call->peer(),
                     authorization == metadata.end()
                         ? absl::string_view()
                         : absl::string_view(authorization->second.data(),
                                             authorization->second.size()),
                     call->mutable_ticket(), &answer_at);
    if (!entered.ok()) {
      const absl::Duration delay = answer_at - door_->Now();
      // A wrong token's call, held only to slow its guesser, is idle: the
      // ledger may end it for a host under its fair share, so that held
      // guesses never keep a flownode out.
      if (delay > absl::ZeroDuration() && call->ticket() != nullptr) {
        call->ticket()->Attach(call).IgnoreError();
      }
      call->Serve(std::make_unique<Refused>(
                      call, ToGrpcStatus(entered, call->context()), delay),
                  entry.series);
      return;
    }
    // Idle until its request comes: the ledger may end it for another host.
    if (absl::Status attached = call->ticket()->Attach(call); !attached.ok()) {
      call->Serve(std::make_unique<Refused>(
                      call, ToGrpcStatus(attached, call->context())),
                  entry.series);
      return;
    }
    // Its request is due within the door's deadline, whatever its kind.
    call->ArmRequestDeadline(absl::Now() + door_->options().request_timeout,
                             door_->metrics());
  }
  call->Serve(entry.make.cq(call), entry.series);
}

void CallDispatcher::OnCall(H2Call* call, const std::string& peer) {
  H2Start start;
  start.call = call;
  start.peer = peer;
  start.book = &book_;
  const CallLimits limits{0, door_};
  auto it = methods_.find(call->head().path);
  if (it == methods_.end()) {
    start.series = unknown_series_;
    H2Refused::Start(std::move(start), CallLimits{},
                     absl::UnimplementedError(""), false, absl::Now());
    return;
  }
  const Entry& entry = it->second;
  start.row = entry.row;
  start.series = entry.series;
  if (door_ != nullptr) {
    // Charged from its HEADERS, before its handler exists.
    absl::Time answer_at = absl::InfinitePast();
    absl::Status entered =
        door_->Enter(*entry.row, peer, call->head().authorization,
                     &start.ticket, &answer_at);
    if (!entered.ok()) {
      H2Refused::Start(std::move(start), limits, std::move(entered), true,
                       absl::Now() + (answer_at - door_->Now()));
      return;
    }
  }
  entry.make.h2(std::move(start));
}

void CallDispatcher::OnConnectionCut(const std::string& peer) {
  if (door_ == nullptr) return;
  door_->metrics()->ConnectionDropped(ConnectionDrop::kGrpcRapidReset);
  LogLimited(spdlog::level::warn, "rapid_reset", door_->ledger().HostOf(peer),
             "closed the connection of {}: it reset more than {} calls in a "
             "burst (--max_early_resets), or sent a header block without end",
             peer, door_->options().max_early_resets);
}

void CallDispatcher::SweepOn(H2Transport* transport) {
  if (door_ == nullptr || door_->options().sweep_period <= absl::ZeroDuration()) {
    return;
  }
  transport->Every(door_->options().sweep_period, [door = door_] { door->Sweep(); });
}

bool CallDispatcher::WaitForCalls(absl::Time deadline) const {
  return book_.WaitForNone(deadline);
}

}  // namespace metasrv::server
