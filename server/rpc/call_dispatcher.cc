#include "server/rpc/call_dispatcher.h"

#include <grpcpp/support/status.h>

#include <utility>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "server/rpc/grpc_status.h"

namespace metasrv::server {
namespace {

// Requests for the next call kept out at once: a burst of new streams (a
// fleet reconnecting) is accepted without a round trip per call.
constexpr int kAcceptors = 16;

// A call finished at once with a status, reading nothing: a method nobody
// registered (UNIMPLEMENTED with no message, what gRPC itself sends), or a
// call the door refused.
class Refused final : public CallHandler {
 public:
  Refused(ServerCall* call, grpc::Status status)
      : call_(call),
        status_(std::move(status)),
        finished_(this, &Refused::OnFinished) {}
  ServerCall* call() const { return call_; }
  void Start() override {
    call_->Finishing(status_.error_code());
    call_->stream()->Finish(status_, call_->BeginFinish(&finished_));
  }

 private:
  void OnFinished(bool) {}

  ServerCall* const call_;     // The call; owns this.
  const grpc::Status status_;  // What it finishes with.
  CallOp<Refused> finished_;   // Its status sent.
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
}

void CallDispatcher::Dispatch(ServerCall* call) {
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
    absl::Status entered =
        door_->Enter(*entry.row, call->context()->peer(),
                     authorization == metadata.end()
                         ? absl::string_view()
                         : absl::string_view(authorization->second.data(),
                                             authorization->second.size()),
                     call->mutable_ticket());
    if (!entered.ok()) {
      call->Serve(std::make_unique<Refused>(
                      call, ToGrpcStatus(entered, call->context())),
                  entry.series);
      return;
    }
    // Its request is due within the door's deadline, whatever its kind.
    call->ArmRequestDeadline(absl::Now() + door_->options().request_timeout,
                             door_->metrics());
  }
  call->Serve(entry.make(call), entry.series);
}

bool CallDispatcher::WaitForCalls(absl::Time deadline) const {
  return book_.WaitForNone(deadline);
}

}  // namespace metasrv::server
