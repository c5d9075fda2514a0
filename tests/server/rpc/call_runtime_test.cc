// The server's call runtime on a real gRPC server on loopback: the
// dispatcher (unknown methods, metrics, calls that outlive their client, the
// wait at shutdown) and the pollers (one thread while it keeps up, a helper
// when a completion blocks or the queue is saturated, back to one after).
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "metasrv/v1/metasrv.pb.h"
#include "prometheus/registry.h"
#include "server/rpc/call_dispatcher.h"
#include "server/rpc/cq_poller.h"
#include "server/rpc/unary_call.h"
#include "tests/server/rpc/runtime_fixture.h"
#include "tests/server/test_util.h"

namespace metasrv::server {
namespace {

using ::metasrv::testing::WaitFor;
using Call = UnaryCall<SmallRequest, SmallResponse>;

// A method that answers at once: the request's flow ids, counted.
// The runtime is tested on real rows of the method table (this one's
// request is a ForgetFlowsRequest), without a door.
void AddEcho(Runtime* runtime) {
  runtime->dispatcher().Add(
      Method::kForgetFlows, Call::Factory({}, [](Call* call) {
        call->response()->set_forgotten_flows(call->request().flow_ids_size());
        call->Finish(absl::OkStatus());
      }));
}

TEST(CallDispatcherTest, AnUnknownMethodIsUnimplementedAndCountedAsUnknown) {
  Runtime runtime;
  AddEcho(&runtime);
  runtime.Start();
  SmallRequest request;
  request.add_flow_ids(7);
  SmallResponse answer;
  ASSERT_TRUE(
      runtime.Unary("/metasrv.v1.Admin/ForgetFlows", request, &answer).ok());
  EXPECT_EQ(answer.forgotten_flows(), 1u);
  for (const char* made_up : {"/test.Svc/Nope", "/other.Svc/Made/Up"}) {
    grpc::Status status = runtime.Unary(made_up, request, nullptr);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNIMPLEMENTED);
    EXPECT_EQ(status.error_message(), "");
  }
  // One series for every made-up name: a client cannot add series. Each
  // call is counted when gRPC is done with it, which may come after the
  // client has its answer: wait for every count asserted.
  EXPECT_TRUE(WaitFor([&] {
    return runtime.Handled("unknown", "unknown", "Unimplemented") == 2 &&
           runtime.Handled("metasrv.v1.Admin", "ForgetFlows", "OK") == 1;
  }));
  EXPECT_EQ(runtime.Handled("test.Svc", "Nope", "Unimplemented"), -1);
}

// A call whose client gives up while its method still works on it: the
// method's Finish() later is safe, the call is counted as cancelled, and
// no call is left when the server stops.
TEST(CallDispatcherTest, ACallOutlivesItsClientUntilItsMethodFinishes) {
  Runtime runtime;
  std::atomic<Call*> parked{nullptr};
  runtime.dispatcher().Add(
      Method::kForgetNodes,
      Call::Factory({}, [&](Call* call) { parked.store(call); }));
  runtime.Start();
  SmallRequest request;
  grpc::Status status = runtime.Unary("/metasrv.v1.Admin/ForgetNodes", request,
                                      nullptr, absl::Milliseconds(200));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  ASSERT_NE(parked.load(), nullptr);
  EXPECT_TRUE(WaitFor([&] { return parked.load()->cancelled(); }));
  EXPECT_EQ(runtime.dispatcher().live_calls(), 1);  // Held for its method.
  parked.load()->Finish(absl::OkStatus());
  EXPECT_TRUE(WaitFor([&] { return runtime.dispatcher().live_calls() == 0; }));
  EXPECT_TRUE(WaitFor([&] {
    return runtime.Handled("metasrv.v1.Admin", "ForgetNodes", "Canceled") == 1;
  }));
  runtime.Stop();
  EXPECT_TRUE(runtime.calls_ended());
}

TEST(CqPollerTest, AHandlerThatBlocksDoesNotStopTheQueue) {
  CqPoller::Options options;
  options.max_threads = 2;
  Runtime runtime(options);
  absl::Notification entered;
  absl::Notification release;
  runtime.dispatcher().Add(Method::kForgetNodes,
                           Call::Factory({}, [&](Call* call) {
                             entered.Notify();
                             release.WaitForNotification();  // Blocks a poller.
                             call->Finish(absl::OkStatus());
                           }));
  AddEcho(&runtime);
  runtime.Start();
  // The first poller counts itself once its thread runs.
  EXPECT_TRUE(WaitFor([&] { return runtime.poller().polling() == 1; }));
  std::thread blocked([&] {
    EXPECT_TRUE(
        runtime.Unary("/metasrv.v1.Admin/ForgetNodes", SmallRequest(), nullptr)
            .ok());
  });
  entered.WaitForNotification();
  // The one polling thread is stuck in the handler; a helper takes over.
  SmallResponse answer;
  EXPECT_TRUE(
      runtime.Unary("/metasrv.v1.Admin/ForgetFlows", SmallRequest(), &answer)
          .ok());
  EXPECT_GE(runtime.poller().wakeups(), 1u);
  release.Notify();
  blocked.join();
  // Idle again: back to one thread.
  EXPECT_TRUE(WaitFor([&] { return runtime.poller().polling() == 1; }));
}

TEST(CqPollerTest, AHelperJoinsWhileTheQueueIsSaturatedAndLeavesAfter) {
  CqPoller::Options options;
  options.max_threads = 2;
  Runtime runtime(options);
  // Each call keeps its poller busy for 2 ms.
  runtime.dispatcher().Add(
      Method::kForgetNodes, Call::Factory({}, [](Call* call) {
        const absl::Time until = absl::Now() + absl::Milliseconds(2);
        while (absl::Now() < until) {
        }
        call->Finish(absl::OkStatus());
      }));
  runtime.Start();
  std::atomic<bool> stop{false};
  std::atomic<int> most{0};
  std::vector<std::thread> clients;
  for (int i = 0; i < 4; ++i) {
    clients.emplace_back([&] {
      while (!stop.load()) {
        EXPECT_TRUE(
            runtime
                .Unary("/metasrv.v1.Admin/ForgetNodes", SmallRequest(), nullptr)
                .ok());
        int now = runtime.poller().polling();
        int seen = most.load();
        while (now > seen && !most.compare_exchange_weak(seen, now)) {
        }
      }
    });
  }
  EXPECT_TRUE(WaitFor([&] { return most.load() == 2; }));
  stop.store(true);
  for (std::thread& t : clients) t.join();
  EXPECT_GE(runtime.poller().wakeups(), 1u);
  EXPECT_TRUE(WaitFor([&] { return runtime.poller().polling() == 1; }));
}

TEST(CqPollerTest, PostedTasksRunOnAPollerOnceAndNotAfterStop) {
  Runtime runtime;
  runtime.Start();
  absl::Mutex mu;
  std::vector<int> ran;                  // Guarded by mu.
  std::vector<std::thread::id> threads;  // Guarded by mu.
  for (int i = 0; i < 100; ++i) {
    runtime.poller().Post([&, i] {
      absl::MutexLock lock(&mu);
      ran.push_back(i);
      threads.push_back(std::this_thread::get_id());
    });
  }
  EXPECT_TRUE(WaitFor([&] {
    absl::MutexLock lock(&mu);
    return ran.size() == 100;
  }));
  {
    absl::MutexLock lock(&mu);
    // Each task ran once, on a poller thread, not the poster's.
    std::sort(ran.begin(), ran.end());
    for (int i = 0; i < 100; ++i) EXPECT_EQ(ran[i], i);
    for (const std::thread::id& id : threads) {
      EXPECT_NE(id, std::this_thread::get_id());
    }
  }
  runtime.Stop();
  // After Stop a task is dropped, unrun, and nothing crashes.
  std::atomic<bool> late{false};
  runtime.poller().Post([&] { late.store(true); });
  EXPECT_FALSE(late.load());
}

}  // namespace
}  // namespace metasrv::server
