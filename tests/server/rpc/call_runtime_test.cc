// The server's call runtime on the nghttp2 transport on loopback: the
// dispatcher (unknown methods, metrics, calls that outlive their client, the
// wait at shutdown).
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <string>

#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "metasrv/v1/metasrv.pb.h"
#include "prometheus/registry.h"
#include "server/rpc/call_dispatcher.h"
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
      Method::kForgetFlows, Call::Factory([](Call* call) {
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
      Call::Factory([&](Call* call) { parked.store(call); }));
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
  // Counted once, as its end came: the client's reset at its deadline
  // (CANCELLED), or the server's own timer of that deadline when it fired
  // first (a loaded machine delays the client's timer).
  EXPECT_TRUE(WaitFor([&] {
    const double cancelled = std::max(
        0.0, runtime.Handled("metasrv.v1.Admin", "ForgetNodes", "Canceled"));
    const double expired = std::max(
        0.0,
        runtime.Handled("metasrv.v1.Admin", "ForgetNodes", "DeadlineExceeded"));
    return cancelled + expired == 1;
  })) << "Canceled "
      << runtime.Handled("metasrv.v1.Admin", "ForgetNodes", "Canceled")
      << ", DeadlineExceeded "
      << runtime.Handled("metasrv.v1.Admin", "ForgetNodes", "DeadlineExceeded")
      << ", OK " << runtime.Handled("metasrv.v1.Admin", "ForgetNodes", "OK");
  runtime.Stop();
  EXPECT_TRUE(runtime.calls_ended());
}

}  // namespace
}  // namespace metasrv::server
