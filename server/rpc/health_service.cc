#include "server/rpc/health_service.h"


#include <memory>
#include <optional>
#include <string>

#include "server/rpc/grpc_status.h"
#include "server/rpc/grpc151_zstd_requests.h"
#include "server/rpc/stream_end.h"

namespace metasrv::server {
namespace {

using grpc::health::v1::HealthCheckRequest;
using grpc::health::v1::HealthCheckResponse;

// A HealthCheckRequest is a service name: small.
constexpr size_t kMaxHealthRequest = 4 << 10;

}  // namespace

// One Watch stream: the status when it began, then each change, one write at
// a time (a change while one is in flight waits; the latest is sent).
class HealthService::Watcher final : public CallHandler,
                                     public AbortableStream {
 public:
  Watcher(ServerCall* call, HealthService* service)
      : call_(call),
        service_(service),
        read_(this, &Watcher::OnRead),
        written_(this, &Watcher::OnWritten),
        finished_(this, &Watcher::OnFinished) {}

  ServerCall* call() const { return call_; }

  void Start() override {
    call_->stream()->Read(&request_, call_->Begin(&read_));
  }
  void OnCancel() override {
    Abort(grpc::Status(grpc::StatusCode::CANCELLED, "watcher cancelled"));
  }
  void OnDone() override {
    if (registered_) service_->watchers_.Remove(this);
  }
  void Abort(const grpc::Status& status) override {
    {
      absl::MutexLock lock(&mu_);
      if (!end_.Abort(status)) return;
    }
    StartFinish(status);
  }

  // The status may have changed: sends it unless it was the last sent.
  void Offer() {
    {
      absl::MutexLock lock(&mu_);
      if (end_.finished || end_.finish_after_write.has_value()) return;
      if (end_.write_in_flight) {
        pending_ = true;  // Sent once the write in flight completes.
        return;
      }
      if (!StartWriteLocked()) return;
    }
    call_->stream()->Write(out_, call_->Begin(&written_));
  }

 private:
  void OnRead(bool ok) {
    // The door's deadline for a first request no longer applies (a late one
    // was cancelled: its read failed).
    call_->RequestArrived();
    HealthCheckRequest request;
    absl::Status decoded =
        ok ? DecodeRequest(&request_, kMaxHealthRequest, &request)
           : absl::InternalError("the call carried no request message");
    request_.Clear();
    if (decoded.ok()) decoded = service_->watchers_.Add(this);
    if (!decoded.ok()) {
      {
        absl::MutexLock lock(&mu_);
        if (!end_.TryFinish()) return;
      }
      StartFinish(ToGrpcStatus(decoded, call_->context()));
      return;
    }
    registered_ = true;
    name_ = request.service();
    Offer();
  }
  void OnWritten(bool ok) {
    StreamEnd::AfterWrite after;
    bool write = false;
    {
      absl::MutexLock lock(&mu_);
      after = end_.WriteDone(ok);
      if (after.go_on && pending_) {
        pending_ = false;
        write = StartWriteLocked();
      }
    }
    if (after.finish.has_value()) {
      StartFinish(*after.finish);
    } else if (write) {
      call_->stream()->Write(out_, call_->Begin(&written_));
    }
  }
  void OnFinished(bool) {}

  // Makes the status now the write in flight, unless it is the last one
  // sent. Returns whether a write must start.
  bool StartWriteLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const ServingStatus status = service_->StatusOf(name_);
    if (sent_.has_value() && *sent_ == status) return false;
    sent_ = status;
    HealthCheckResponse response;
    response.set_status(status);
    SerializeMessage(response, &out_);
    end_.write_in_flight = true;
    return true;
  }
  void StartFinish(const grpc::Status& status) {
    call_->Finishing(static_cast<int>(status.error_code()));
    call_->stream()->Finish(status, call_->BeginFinish(&finished_));
  }

  ServerCall* const call_;              // The call; owns this.
  HealthService* const service_;        // Its statuses; borrowed.
  grpc::ByteBuffer request_;            // The request's bytes, until decoded.
  std::string name_;                    // The service watched.
  bool registered_ = false;             // Whether Add() succeeded.
  CallOp<Watcher> read_;                // The request read.
  CallOp<Watcher> written_;             // A status written.
  CallOp<Watcher> finished_;            // The status of the call sent.
  absl::Mutex mu_;                      // Guards the fields below.
  grpc::ByteBuffer out_;                // The status being written.
  StreamEnd end_ ABSL_GUARDED_BY(mu_);  // Write in flight, finishing.
  std::optional<ServingStatus> sent_ ABSL_GUARDED_BY(mu_);  // Last sent.
  bool pending_ ABSL_GUARDED_BY(mu_) = false;  // A change came meanwhile.
};

HealthService::HealthService(uint64_t max_watchers)
    : watchers_(max_watchers, "health watch") {
  absl::MutexLock lock(&mu_);
  serving_ = true;  // As gRPC's default service begins.
}

void HealthService::Register(CallDispatcher* dispatcher, CallLimits limits) {
  limits.max_request_bytes = kMaxHealthRequest;
  dispatcher->Add(Method::kHealthCheck,
                  CheckCall::Factory(limits,
                                     [this](CheckCall* call) { Check(call); }));
  dispatcher->Add(Method::kHealthWatch,
                  [this](ServerCall* call) -> std::unique_ptr<CallHandler> {
                    return std::make_unique<Watcher>(call, this);
                  });
}

HealthService::ServingStatus HealthService::StatusOf(
    const std::string& service) const {
  if (!service.empty()) return HealthCheckResponse::SERVICE_UNKNOWN;
  absl::MutexLock lock(&mu_);
  return serving_ ? HealthCheckResponse::SERVING
                  : HealthCheckResponse::NOT_SERVING;
}

void HealthService::Check(CheckCall* call) const {
  const ServingStatus status = StatusOf(call->request().service());
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
  watchers_.Close(
      grpc::Status(grpc::StatusCode::UNAVAILABLE, "metasrv is shutting down"));
}

void HealthService::Tell() {
  // Only Watchers are ever added to watchers_.
  watchers_.ForEach(
      [](AbortableStream* stream) { static_cast<Watcher*>(stream)->Offer(); });
}

}  // namespace metasrv::server
