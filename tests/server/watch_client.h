// A WatchFlowState client for tests, on gRPC's callback client API, and the
// state its messages add up to.
#ifndef METASRV_TESTS_SERVER_WATCH_CLIENT_H_
#define METASRV_TESTS_SERVER_WATCH_CLIENT_H_

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "metasrv/v1/metasrv.grpc.pb.h"
#include "tests/server/test_util.h"

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

// A watcher's view: flow id -> "size/exec", from applying its messages in
// order as a client must. Fails the test when a delta does not follow the
// message before it.
inline std::map<uint32_t, std::string> WatchedFlows(
    const std::vector<WatchFlowStateResponse>& messages) {
  std::map<uint32_t, std::string> flows;
  for (size_t i = 0; i < messages.size(); ++i) {
    const WatchFlowStateResponse& m = messages[i];
    if (m.delta()) {
      EXPECT_GT(i, 0u) << "the first message is never a delta";
      if (i > 0) {
        EXPECT_EQ(m.base_sequence(), messages[i - 1].sequence()) << i;
      }
      for (uint32_t id : m.removed_flow_ids()) {
        EXPECT_EQ(flows.erase(id), 1u) << "removed unknown flow " << id;
      }
    } else {
      flows.clear();
    }
    const metasrv::v1::GetFlowStateResponse& s = m.state();
    for (int f = 0; f < s.flow_ids_size(); ++f) {
      flows[s.flow_ids(f)] =
          absl::StrCat(s.state_sizes(f), "/", s.last_exec_times_ms(f));
    }
  }
  return flows;
}

// The same view, from GetFlowState.
inline std::map<uint32_t, std::string> ReadFlows(
    const std::shared_ptr<grpc::Channel>& ch) {
  std::map<uint32_t, std::string> flows;
  for (const FlowRow& r : GetFlowState(ch).flows) {
    flows[r.flow_id] = absl::StrCat(r.state_size, "/", r.last_exec_time_ms);
  }
  return flows;
}

}  // namespace metasrv::testing

#endif  // METASRV_TESTS_SERVER_WATCH_CLIENT_H_
