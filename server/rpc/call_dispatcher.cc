#include "server/rpc/call_dispatcher.h"

#include <grpcpp/support/status.h>

#include <utility>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"

namespace metasrv::server {
namespace {

// Requests for the next call kept out at once: a burst of new streams (a
// fleet reconnecting) is accepted without a round trip per call.
constexpr int kAcceptors = 16;

// The answer to a method nobody registered: what gRPC itself sends.
class Unimplemented final : public CallHandler {
 public:
  explicit Unimplemented(ServerCall* call)
      : call_(call), finished_(this, &Unimplemented::OnFinished) {}
  ServerCall* call() const { return call_; }
  void Start() override {
    const grpc::Status status(grpc::StatusCode::UNIMPLEMENTED, "");
    call_->Finishing(status.error_code());
    call_->stream()->Finish(status, call_->BeginFinish(&finished_));
  }

 private:
  void OnFinished(bool) {}

  ServerCall* const call_;          // The call; owns this.
  CallOp<Unimplemented> finished_;  // Its status sent.
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

CallDispatcher::CallDispatcher(CallMetrics* metrics) : metrics_(metrics) {
  if (metrics_ != nullptr) {
    // One series for every unregistered method: a client cannot make new
    // series by making up names.
    unknown_series_ =
        metrics_->For("/unknown/unknown", CallMetrics::Type::kUnary);
  }
}

CallDispatcher::~CallDispatcher() = default;

void CallDispatcher::Add(const std::string& method, CallMetrics::Type type,
                         Factory make) {
  CallSeries* series =
      metrics_ == nullptr ? nullptr : metrics_->For(method, type);
  methods_[method] = Entry{std::move(make), series};
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
    call->Serve(std::make_unique<Unimplemented>(call), unknown_series_);
    return;
  }
  call->Serve(it->second.make(call), it->second.series);
}

bool CallDispatcher::WaitForCalls(absl::Time deadline) const {
  return book_.WaitForNone(deadline);
}

}  // namespace metasrv::server
