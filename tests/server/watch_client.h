// A WatchFlowState client for tests, on gRPC's callback client API.
#ifndef METASRV_TESTS_SERVER_WATCH_CLIENT_H_
#define METASRV_TESTS_SERVER_WATCH_CLIENT_H_

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "metasrv/v1/metasrv.grpc.pb.h"

namespace metasrv::testing {

using metasrv::v1::WatchFlowStateResponse;

// One WatchFlowState call, read by gRPC's callback client API. With `hold`,
// it reads the first message and then nothing until Release(): a slow reader.
// With `deltas`, it asks for changes only; with `min_interval_ms`, for at
// most one message per that many ms.
class WatchClient final
    : public grpc::ClientReadReactor<WatchFlowStateResponse> {
 public:
  explicit WatchClient(metasrv::v1::FlowState::Stub* stub, bool hold = false,
                       bool deltas = false, uint32_t min_interval_ms = 0)
      : hold_(hold) {
    request_.set_deltas(deltas);
    request_.set_min_interval_ms(min_interval_ms);
    stub->async()->WatchFlowState(&context_, &request_, this);
    StartRead(&incoming_);
    StartCall();
  }
  ~WatchClient() override {
    context_.TryCancel();
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(&done_));
  }

  void OnReadDone(bool ok) override {
    if (!ok) return;  // OnDone follows.
    bool again = false;
    {
      absl::MutexLock lock(&mu_);
      messages_.push_back(incoming_);
      reading_ = !hold_;
      again = reading_;
    }
    if (again) StartRead(&incoming_);
  }
  void OnDone(const grpc::Status& status) override {
    absl::MutexLock lock(&mu_);
    status_ = status;
    done_ = true;
  }

  // Starts reading again, and keeps reading.
  void Release() {
    {
      absl::MutexLock lock(&mu_);
      hold_ = false;
      if (reading_ || done_) return;
      reading_ = true;
    }
    StartRead(&incoming_);
  }

  // Waits up to `timeout` for `pred` over the messages so far.
  bool WaitFor(const std::function<
                   bool(const std::vector<WatchFlowStateResponse>&)>& pred,
               absl::Duration timeout = absl::Seconds(10)) {
    absl::MutexLock lock(&mu_);
    auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return pred(messages_) || done_;
    };
    mu_.AwaitWithTimeout(absl::Condition(&ready), timeout);
    return pred(messages_);
  }
  std::vector<WatchFlowStateResponse> messages() {
    absl::MutexLock lock(&mu_);
    return messages_;
  }
  std::optional<grpc::Status> status() {
    absl::MutexLock lock(&mu_);
    if (!done_) return std::nullopt;
    return status_;
  }
  bool WaitDone(absl::Duration timeout = absl::Seconds(10)) {
    absl::MutexLock lock(&mu_);
    return mu_.AwaitWithTimeout(absl::Condition(&done_), timeout);
  }

 private:
  grpc::ClientContext context_;
  metasrv::v1::WatchFlowStateRequest request_;
  WatchFlowStateResponse incoming_;  // Read into; copied out.
  absl::Mutex mu_;
  bool hold_ ABSL_GUARDED_BY(mu_);
  bool reading_ ABSL_GUARDED_BY(mu_) = true;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  grpc::Status status_ ABSL_GUARDED_BY(mu_);
  std::vector<WatchFlowStateResponse> messages_ ABSL_GUARDED_BY(mu_);
};

}  // namespace metasrv::testing

#endif  // METASRV_TESTS_SERVER_WATCH_CLIENT_H_
