#include "server/rpc/server_call.h"

#include <utility>

namespace metasrv::server {

int64_t CallBook::live() const {
  absl::MutexLock lock(&mu_);
  return live_;
}

bool CallBook::WaitForNone(absl::Time deadline) const {
  absl::MutexLock lock(&mu_);
  auto none = [this]()
                  ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return live_ == 0; };
  return mu_.AwaitWithDeadline(absl::Condition(&none), deadline);
}

void CallBook::Enter() {
  absl::MutexLock lock(&mu_);
  ++live_;
}

void CallBook::Leave() {
  absl::MutexLock lock(&mu_);
  --live_;
}

ServerCall::ServerCall(CallBook* book)
    : book_(book), stream_(&context_), done_(this) {
  // Before the call is requested: gRPC then tells when it is done, whether
  // it finished or was cancelled.
  context_.AsyncNotifyWhenDone(done_.AsTag());
}

ServerCall::~ServerCall() {
  // Out of the ledger's open count before it is counted handled, so that a
  // scrape that sees it handled never still sees it open.
  ticket_.reset();
  if (counted_.has_value() && cancelled_.load() && !got_request_.load() &&
      !server_cancelled_.load() && book_->on_early_reset) {
    book_->on_early_reset(peer_);
  }
  if (counted_.has_value()) {
    const int code = code_.load();
    counted_->Finishing(code == kNoCode ? GRPC_STATUS_CANCELLED : code);
    counted_->Done();
    book_->Leave();
  }
}

void ServerCall::ArmRequestDeadline(absl::Time deadline, Metrics* metrics) {
  deadline_metrics_ = metrics;
  request_phase_.store(kWaiting, std::memory_order_release);
  request_alarm_.Set(cq_, absl::ToChronoTime(deadline), Begin(&request_due_));
}

bool ServerCall::SettleRequestDeadline() {
  int waiting = kWaiting;
  if (request_phase_.compare_exchange_strong(waiting, kArrived,
                                             std::memory_order_acq_rel)) {
    request_alarm_.Cancel();
    return true;
  }
  return waiting != kTimedOut;
}

void ServerCall::RequestDueTag::Complete(bool fired) {
  int waiting = kWaiting;
  if (fired && call_->request_phase_.compare_exchange_strong(
                   waiting, kTimedOut, std::memory_order_acq_rel)) {
    call_->deadline_metrics_->DoorRefused(DoorRefusal::kRequestTimeout);
    call_->Finishing(GRPC_STATUS_DEADLINE_EXCEEDED);
    call_->server_cancelled_.store(true, std::memory_order_relaxed);
    call_->context_.TryCancel();
  }
  call_->Release();
}

void ServerCall::Request(grpc::AsyncGenericService* service,
                         grpc::ServerCompletionQueue* cq, CqTag* accepted) {
  cq_ = cq;
  service->RequestCall(&context_, &stream_, cq, cq, accepted->AsTag());
}

void ServerCall::Serve(std::unique_ptr<CallHandler> handler,
                       CallSeries* series) {
  book_->Enter();
  counted_.emplace(series);
  {
    absl::MutexLock lock(&mu_);
    handler_ = std::move(handler);
  }
  handler_->Start();
  // A cancellation that came before the handler could hear of it.
  bool tell = false;
  {
    absl::MutexLock lock(&mu_);
    started_ = true;
    tell = cancelled_.load() && !cancel_told_;
    cancel_told_ = cancel_told_ || tell;
  }
  if (tell) handler_->OnCancel();
  Release();  // Serve()'s own hold.
}

void* ServerCall::Begin(CqTag* op) {
  refs_.fetch_add(1);
  return op->AsTag();
}

grpc_call_error ServerCall::StartBatch(const grpc_op* ops, size_t count,
                                       CqTag* op) {
  // The queue hands the tag back to CqTag::FinalizeResult.
  void* tag = Begin(op);
  const grpc_call_error started =
      grpc_call_start_batch(c_call(), ops, count, tag, nullptr);
  if (started != GRPC_CALL_OK) Release();
  return started;
}

void ServerCall::Release() {
  if (refs_.fetch_sub(1) != 1) return;
  if (handler_ != nullptr) handler_->OnDone();
  delete this;
}

void ServerCall::DoneTag::Complete(bool /*ok*/) {
  // IsCancelled() is valid now that the notification came.
  const bool cancelled = call_->context_.IsCancelled();
  if (cancelled) call_->Finishing(GRPC_STATUS_CANCELLED);
  bool tell = false;
  {
    absl::MutexLock lock(&call_->mu_);
    call_->cancelled_.store(cancelled);
    tell = cancelled && call_->started_ && !call_->cancel_told_;
    call_->cancel_told_ = call_->cancel_told_ || tell;
  }
  if (tell) call_->handler_->OnCancel();
  call_->Release();
}

}  // namespace metasrv::server
