// The server-stream shape on a real gRPC server on loopback: a refused
// request, pushes in order with the newest waiting while a write is in
// flight, the client going away, an abort from outside (a step-down), the
// request deadline, the door's stall policy, and the handler's lifetime in
// each case (closed exactly once).
#include "server/rpc/push_call.h"

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/functional/function_ref.h"
#include "absl/synchronization/mutex.h"
#include "core/clock.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "gtest/gtest.h"
#include "tests/server/rpc/runtime_fixture.h"
#include "tests/server/test_util.h"

namespace metasrv::server {
namespace {

using grpc::health::v1::Health;
using grpc::health::v1::HealthCheckRequest;
using grpc::health::v1::HealthCheckResponse;
using ::metasrv::testing::WaitFor;

// The open calls, to push to.
class Calls {
 public:
  void Add(PushCall* call) {
    absl::MutexLock lock(&mu_);
    calls_.insert(call);
  }
  void Remove(PushCall* call) {
    absl::MutexLock lock(&mu_);
    calls_.erase(call);
  }
  void ForEach(absl::FunctionRef<void(PushCall*)> fn) {
    absl::MutexLock lock(&mu_);
    for (PushCall* call : calls_) fn(call);
  }
  size_t size() {
    absl::MutexLock lock(&mu_);
    return calls_.size();
  }

 private:
  absl::Mutex mu_;
  absl::flat_hash_set<PushCall*> calls_ ABSL_GUARDED_BY(mu_);
};

// What the handlers saw, over all calls; and the open calls, to push to.
struct PushSeen {
  std::atomic<int> closed{0};
  std::atomic<int> stalled{0};
  std::atomic<int> chosen{0};
  Calls calls;
};

// An item that says which status to send.
// With `pad`, the message is that many bytes instead (not a response: a
// client that reads it would fail; one that does not read holds the write).
struct Status final : PushItem {
  HealthCheckResponse::ServingStatus status;
  size_t pad = 0;
};

std::shared_ptr<const PushItem> Item(uint64_t sequence,
                                     HealthCheckResponse::ServingStatus s,
                                     size_t pad = 0) {
  auto item = std::make_shared<Status>();
  item->sequence = sequence;
  item->status = s;
  item->pad = pad;
  return item;
}

// Refuses a request for service "no"; otherwise registers its call and
// sends whatever it is offered, first an item of sequence 1 (SERVING).
class Pusher final : public PushCall::Handler {
 public:
  explicit Pusher(PushSeen* seen) : seen_(seen) {}
  google::protobuf::MessageLite* request() override { return &request_; }
  absl::Status OnRequest(PushCall* call) override {
    call_ = call;
    if (request_.service() == "no") {
      return absl::FailedPreconditionError("not here");
    }
    seen_->calls.Add(call);
    registered_ = true;
    call->Offer(Item(1, HealthCheckResponse::SERVING));
    return absl::OkStatus();
  }
  const SharedMessage* Choose(const PushItem& item) override {
    ++seen_->chosen;
    const auto& status = static_cast<const Status&>(item);
    if (status.pad > 0) {
      message_ = std::make_unique<SharedMessage>(SharedPieces{SharedBytes::Of(
          std::make_shared<const std::string>(status.pad, 'x'))});
      return message_.get();
    }
    HealthCheckResponse response;
    response.set_status(status.status);
    message_ = std::make_unique<SharedMessage>(response);
    return message_.get();
  }
  void OnStalled() override { ++seen_->stalled; }
  void OnClose() override {
    if (registered_) seen_->calls.Remove(call_);
    ++seen_->closed;
  }

 private:
  PushSeen* const seen_;
  HealthCheckRequest request_;
  PushCall* call_ = nullptr;
  bool registered_ = false;
  std::unique_ptr<SharedMessage> message_;
};

void AddPusher(Runtime* runtime, PushSeen* seen) {
  runtime->dispatcher().Add(
      Method::kHealthWatch, PushCall::Factory([seen]() {
        return std::unique_ptr<PushCall::Handler>(new Pusher(seen));
      }));
}

// Offers `item` to every open call.
void OfferAll(PushSeen* seen, const std::shared_ptr<const PushItem>& item) {
  seen->calls.ForEach([&](PushCall* call) { call->Offer(item); });
}

HealthCheckRequest Service(const std::string& name) {
  HealthCheckRequest request;
  request.set_service(name);
  return request;
}

TEST(PushCallTest, ARefusedRequestEndsTheCallWithItsStatus) {
  PushSeen seen;
  Runtime runtime;
  AddPusher(&runtime, &seen);
  runtime.Start();
  auto stub = Health::NewStub(runtime.channel());
  grpc::ClientContext context;
  auto reader = stub->Watch(&context, Service("no"));
  HealthCheckResponse response;
  EXPECT_FALSE(reader->Read(&response));
  grpc::Status status = reader->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(status.error_message(), "not here");
  EXPECT_TRUE(WaitFor([&] { return seen.closed.load() == 1; }));
  EXPECT_EQ(seen.chosen.load(), 0);
}

TEST(PushCallTest, PushesInOrderAndDropsWhatIsNotNewer) {
  PushSeen seen;
  Runtime runtime;
  AddPusher(&runtime, &seen);
  runtime.Start();
  auto stub = Health::NewStub(runtime.channel());
  grpc::ClientContext context;
  auto reader = stub->Watch(&context, Service(""));
  HealthCheckResponse response;
  ASSERT_TRUE(reader->Read(&response));  // The first, offered at once.
  EXPECT_EQ(response.status(), HealthCheckResponse::SERVING);
  ASSERT_TRUE(WaitFor([&] { return seen.calls.size() == 1u; }));
  OfferAll(&seen, Item(2, HealthCheckResponse::NOT_SERVING));
  ASSERT_TRUE(reader->Read(&response));
  EXPECT_EQ(response.status(), HealthCheckResponse::NOT_SERVING);
  // Not newer than one offered: dropped.
  OfferAll(&seen, Item(2, HealthCheckResponse::SERVICE_UNKNOWN));
  OfferAll(&seen, Item(1, HealthCheckResponse::SERVICE_UNKNOWN));
  OfferAll(&seen, Item(3, HealthCheckResponse::SERVING));
  ASSERT_TRUE(reader->Read(&response));
  EXPECT_EQ(response.status(), HealthCheckResponse::SERVING);
  EXPECT_EQ(seen.chosen.load(), 3);
  context.TryCancel();
  reader->Finish().IgnoreError();
  EXPECT_TRUE(WaitFor([&] { return seen.closed.load() == 1; }));
  runtime.Stop();
  EXPECT_TRUE(runtime.calls_ended());
}

TEST(PushCallTest, AnAbortFromOutsideEndsEveryStreamOnce) {
  PushSeen seen;
  Runtime runtime;
  AddPusher(&runtime, &seen);
  runtime.Start();
  auto stub = Health::NewStub(runtime.channel());
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
  std::vector<std::unique_ptr<grpc::ClientReader<HealthCheckResponse>>> readers;
  for (int i = 0; i < 5; ++i) {
    contexts.push_back(std::make_unique<grpc::ClientContext>());
    readers.push_back(stub->Watch(contexts.back().get(), Service("")));
    HealthCheckResponse response;
    ASSERT_TRUE(readers.back()->Read(&response));
  }
  ASSERT_TRUE(WaitFor([&] { return seen.calls.size() == 5u; }));
  seen.calls.ForEach(
      [](PushCall* call) { call->Abort(absl::AbortedError("stepped down")); });
  for (auto& reader : readers) {
    HealthCheckResponse response;
    EXPECT_FALSE(reader->Read(&response));
    grpc::Status status = reader->Finish();
    EXPECT_EQ(status.error_code(), grpc::StatusCode::ABORTED);
    EXPECT_EQ(status.error_message(), "stepped down");
  }
  EXPECT_TRUE(WaitFor([&] { return seen.closed.load() == 5; }));
  EXPECT_EQ(seen.calls.size(), 0u);
}

// Through a door: the request is due within --request_timeout; a stream
// whose write is not taken within --reply_stall_limit is ended.
class PushCallDoorTest : public ::testing::Test {
 protected:
  PushCallDoorTest() {
    leadership_.term.leading = true;
    options_.request_timeout = absl::Milliseconds(300);
  }
  TestLeadership leadership_;
  DoorOptions options_;
  core::ManualClock clock_;
};

TEST_F(PushCallDoorTest, AStreamWithoutItsRequestIsEndedAtItsDeadline) {
  CallDoor door(&leadership_, AdminAuth(), options_, &clock_, nullptr);
  PushSeen seen;
  Runtime runtime(&door);
  AddPusher(&runtime, &seen);
  runtime.Start();
  // A generic call that never sends its request.
  grpc::GenericStub generic(runtime.channel());
  grpc::ClientContext context;
  grpc::CompletionQueue cq;
  auto call =
      generic.PrepareCall(&context, "/grpc.health.v1.Health/Watch", &cq);
  call->StartCall(reinterpret_cast<void*>(1));
  void* tag = nullptr;
  bool ok = false;
  ASSERT_TRUE(cq.Next(&tag, &ok));
  grpc::Status status;
  call->Finish(&status, reinterpret_cast<void*>(2));
  ASSERT_TRUE(cq.Next(&tag, &ok));
  EXPECT_TRUE(status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED ||
              status.error_code() == grpc::StatusCode::CANCELLED)
      << status.error_code();
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }
  EXPECT_TRUE(WaitFor([&] { return seen.closed.load() == 1; }));
  EXPECT_EQ(seen.chosen.load(), 0);
}

// Every write has a deadline: a push its client does not read within
// --reply_stall_limit ends its stream, whatever the reply budget, and the
// status reaches the client ahead of the unread data.
TEST_F(PushCallDoorTest, AWriteNotTakenWithinTheStallLimitEndsItsStream) {
  options_.reply_stall_limit = absl::Seconds(1);
  CallDoor door(&leadership_, AdminAuth(), options_, &clock_, nullptr);
  PushSeen seen;
  Runtime runtime(&door);
  AddPusher(&runtime, &seen);
  runtime.Start();
  // A client that takes no more than its HTTP/2 window unread: 64 KiB,
  // not grown by bandwidth probes.
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  args.SetInt(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 64 << 10);
  args.SetInt(GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH, 64 << 20);
  auto stub = Health::NewStub(grpc::CreateCustomChannel(
      runtime.address(), grpc::InsecureChannelCredentials(), args));
  grpc::ClientContext context;
  auto reader = stub->Watch(&context, Service(""));
  HealthCheckResponse response;
  ASSERT_TRUE(reader->Read(&response));
  ASSERT_TRUE(WaitFor([&] { return seen.calls.size() == 1u; }));
  // The client reads no more: a 4 MiB push stays unwritten. The budget is
  // far from exceeded.
  OfferAll(&seen, Item(2, HealthCheckResponse::SERVING, 4 << 20));
  EXPECT_FALSE(door.RepliesExceeded());
  // Past the stall limit the stream ends: its handler is told, it closes,
  // what it held is freed.
  EXPECT_TRUE(WaitFor([&] { return seen.stalled.load() == 1; }));
  EXPECT_TRUE(WaitFor([&] { return seen.closed.load() == 1; }));
  EXPECT_EQ(seen.calls.size(), 0u);
  EXPECT_EQ(door.replies().used(), 0u);
  // The status went out ahead of the 4 MiB the client never took.
  while (reader->Read(&response)) {
  }
  const grpc::Status status = reader->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << status.error_message();
}

}  // namespace
}  // namespace metasrv::server
