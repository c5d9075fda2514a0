#include "server/rpc/health_service.h"

#include <memory>
#include <optional>
#include <string>

#include "server/rpc/grpc_status.h"
#include "server/rpc/push_call.h"

namespace metasrv::server {
namespace {

using grpc::health::v1::HealthCheckRequest;
using grpc::health::v1::HealthCheckResponse;

}  // namespace

// One Watch stream's logic, over the PushCall shape: the status when it
// began, then each change (a change while a write is in flight waits; the
// latest is sent, and a status equal to the last sent is not sent again).
class HealthService::Watcher final : public PushCall::Handler {
 public:
  explicit Watcher(HealthService* service) : service_(service) {}

  google::protobuf::MessageLite* request() override { return &request_; }
  absl::Status OnRequest(PushCall* call) override {
    call_ = call;
    {
      absl::MutexLock lock(&service_->watchers_mu_);
      if (service_->closed_) {
        return absl::UnavailableError("metasrv is shutting down");
      }
      service_->watchers_.insert(call);
    }
    registered_ = true;
    name_ = request_.service();
    call->Offer(service_->Change());
    return absl::OkStatus();
  }
  const SharedMessage* Choose(const PushItem&) override {
    const ServingStatus status = service_->StatusOf(name_);
    if (sent_.has_value() && *sent_ == status) return nullptr;
    sent_ = status;
    HealthCheckResponse response;
    response.set_status(status);
    message_ = std::make_unique<SharedMessage>(response);
    return message_.get();
  }
  void OnClose() override {
    if (!registered_) return;
    absl::MutexLock lock(&service_->watchers_mu_);
    service_->watchers_.erase(call_);
  }

 private:
  HealthService* const service_;  // Its statuses; borrowed.
  PushCall* call_ = nullptr;      // Set by OnRequest().
  HealthCheckRequest request_;    // Decoded by the shape.
  std::string name_;              // The service watched.
  bool registered_ = false;       // Whether Add() succeeded.
  // Only Choose() touches these, under the call's lock.
  std::optional<ServingStatus> sent_;       // The last status sent.
  std::unique_ptr<SharedMessage> message_;  // The status being written.
};

HealthService::HealthService(std::function<bool()> refusing)
    : refusing_(std::move(refusing)) {
  absl::MutexLock lock(&mu_);
  serving_ = true;  // As gRPC's default service begins.
}

void HealthService::Register(CallDispatcher* dispatcher) {
  dispatcher->Add(Method::kHealthCheck,
                  CheckCall::Factory([this](CheckCall* call) { Check(call); }));
  dispatcher->Add(
      Method::kHealthWatch, PushCall::Factory([this]() {
        return std::unique_ptr<PushCall::Handler>(new Watcher(this));
      }));
}

HealthService::ServingStatus HealthService::StatusOf(
    const std::string& service) const {
  if (!service.empty()) return HealthCheckResponse::SERVICE_UNKNOWN;
  absl::MutexLock lock(&mu_);
  return serving_ ? HealthCheckResponse::SERVING
                  : HealthCheckResponse::NOT_SERVING;
}

void HealthService::Check(CheckCall* call) const {
  ServingStatus status = StatusOf(call->request().service());
  if (status == HealthCheckResponse::SERVING && refusing_ && refusing_()) {
    status = HealthCheckResponse::NOT_SERVING;
  }
  if (status == HealthCheckResponse::SERVICE_UNKNOWN) {
    call->Finish(absl::NotFoundError("service name unknown"));
    return;
  }
  call->response()->set_status(status);
  call->Finish(absl::OkStatus());
}

void HealthService::SetServing(bool serving) {
  {
    absl::MutexLock lock(&mu_);
    if (shut_down_ || serving_ == serving) return;
    serving_ = serving;
  }
  Tell();
}

void HealthService::Shutdown() {
  {
    absl::MutexLock lock(&mu_);
    shut_down_ = true;
    serving_ = false;
  }
  Tell();
  absl::MutexLock lock(&watchers_mu_);
  closed_ = true;
  for (PushCall* watcher : watchers_) {
    watcher->Abort(absl::UnavailableError("metasrv is shutting down"));
  }
}

std::shared_ptr<const PushItem> HealthService::Change() {
  auto item = std::make_shared<PushItem>();
  item->sequence = changes_.fetch_add(1) + 1;
  return item;
}

void HealthService::Tell() {
  std::shared_ptr<const PushItem> change = Change();
  absl::MutexLock lock(&watchers_mu_);
  for (PushCall* watcher : watchers_) watcher->Offer(change);
}

}  // namespace metasrv::server
