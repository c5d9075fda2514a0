// The bidirectional stream shape on a real gRPC server on loopback: answers
// in order, each way a handler can end the stream, the client going away,
// an abort from outside (a step-down), the request deadline and the reply
// charge at the door, and the handler's lifetime in each case (opened and
// closed exactly once).
#include "server/rpc/stream_call.h"

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "core/clock.h"
#include "grpc/reflection/v1/reflection.grpc.pb.h"
#include "gtest/gtest.h"
#include "tests/server/rpc/runtime_fixture.h"
#include "tests/server/test_util.h"

namespace metasrv::server {
namespace {

using ::metasrv::testing::WaitFor;
namespace refl = grpc::reflection::v1;
using Call = StreamCall<refl::ServerReflectionRequest,
                        refl::ServerReflectionResponse>;

// What the handlers saw, over all calls.
struct StreamSeen {
  std::atomic<int> opened{0};
  std::atomic<int> closed{0};
  std::atomic<int> requests{0};
};

// Answers each request with its host, "!" added; a host of "end" ends the
// stream with INVALID_ARGUMENT, "abort" answers then ends with ABORTED,
// "big" answers 4 KiB.
class EchoHandler final : public Call::Handler {
 public:
  explicit EchoHandler(StreamSeen* seen) : seen_(seen) {}
  absl::Status OnOpen(Call*) override {
    ++seen_->opened;
    return absl::OkStatus();
  }
  StreamStep OnRequest(refl::ServerReflectionRequest* decoded, const Admission&,
                       refl::ServerReflectionResponse* answer) override {
    ++seen_->requests;
    const refl::ServerReflectionRequest& request = *decoded;
    answer->Clear();
    if (request.host() == "end") {
      return StreamStep::End(absl::InvalidArgumentError("asked to end"));
    }
    answer->set_valid_host(request.host() + "!");
    if (request.host() == "abort") {
      return StreamStep::AnswerThenEnd(absl::AbortedError("not leader"));
    }
    if (request.host() == "big") answer->set_valid_host(std::string(4096, 'b'));
    return StreamStep::Answer();
  }
  void OnClose() override { ++seen_->closed; }

 private:
  StreamSeen* const seen_;
};

void AddEcho(Runtime* runtime, StreamSeen* seen) {
  runtime->dispatcher().Add(
      Method::kReflectionV1, Call::Factory([=]() {
        return std::unique_ptr<Call::Handler>(new EchoHandler(seen));
      }));
}

refl::ServerReflectionRequest Host(const std::string& host) {
  refl::ServerReflectionRequest request;
  request.set_host(host);
  return request;
}

TEST(StreamCallTest, AnswersEveryRequestInOrderAndEndsOkWhenTheClientDoes) {
  StreamSeen seen;
  Runtime runtime;
  AddEcho(&runtime, &seen);
  runtime.Start();
  auto stub = refl::ServerReflection::NewStub(runtime.channel());
  grpc::ClientContext context;
  auto stream = stub->ServerReflectionInfo(&context);
  for (int i = 0; i < 50; ++i) {
    ASSERT_TRUE(stream->Write(Host(absl::StrCat("h", i))));
    refl::ServerReflectionResponse answer;
    ASSERT_TRUE(stream->Read(&answer));
    EXPECT_EQ(answer.valid_host(), absl::StrCat("h", i, "!"));
  }
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
  EXPECT_TRUE(WaitFor([&] { return seen.closed.load() == 1; }));
  EXPECT_EQ(seen.opened.load(), 1);
  EXPECT_EQ(seen.requests.load(), 50);
}

TEST(StreamCallTest, AHandlerEndsTheStreamWithItsStatusOrAfterAnAnswer) {
  StreamSeen seen;
  Runtime runtime;
  AddEcho(&runtime, &seen);
  runtime.Start();
  auto stub = refl::ServerReflection::NewStub(runtime.channel());
  {
    grpc::ClientContext context;
    auto stream = stub->ServerReflectionInfo(&context);
    ASSERT_TRUE(stream->Write(Host("end")));
    refl::ServerReflectionResponse answer;
    EXPECT_FALSE(stream->Read(&answer));
    grpc::Status status = stream->Finish();
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_EQ(status.error_message(), "asked to end");
  }
  {
    grpc::ClientContext context;
    auto stream = stub->ServerReflectionInfo(&context);
    ASSERT_TRUE(stream->Write(Host("abort")));
    refl::ServerReflectionResponse answer;
    ASSERT_TRUE(stream->Read(&answer));
    EXPECT_EQ(answer.valid_host(), "abort!");
    EXPECT_FALSE(stream->Read(&answer));
    grpc::Status status = stream->Finish();
    EXPECT_EQ(status.error_code(), grpc::StatusCode::ABORTED);
    // Without GreptimeDB's metadata, as upstream's not-leader end.
    EXPECT_EQ(context.GetServerTrailingMetadata().count("x-greptime-err-code"),
              0u);
  }
  {
    // Bytes that are no request: the handler's decode refuses them.
    grpc::GenericStub generic(runtime.channel());
    grpc::ClientContext context;
    grpc::CompletionQueue cq;
    auto call = generic.PrepareCall(
        &context, "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
        &cq);
    void* tag = nullptr;
    bool ok = false;
    call->StartCall(reinterpret_cast<void*>(1));
    ASSERT_TRUE(cq.Next(&tag, &ok) && ok);
    grpc::Slice junk(std::string("\xff\xff\xff", 3));
    call->Write(grpc::ByteBuffer(&junk, 1), reinterpret_cast<void*>(2));
    ASSERT_TRUE(cq.Next(&tag, &ok));
    grpc::Status status;
    call->Finish(&status, reinterpret_cast<void*>(3));
    ASSERT_TRUE(cq.Next(&tag, &ok));
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    cq.Shutdown();
    while (cq.Next(&tag, &ok)) {
    }
  }
  EXPECT_TRUE(WaitFor([&] { return seen.closed.load() == 3; }));
  EXPECT_EQ(seen.opened.load(), 3);
}

TEST(StreamCallTest, AClientThatGoesAwayClosesItsHandlerOnce) {
  StreamSeen seen;
  Runtime runtime;
  AddEcho(&runtime, &seen);
  runtime.Start();
  auto stub = refl::ServerReflection::NewStub(runtime.channel());
  for (int i = 0; i < 20; ++i) {
    grpc::ClientContext context;
    auto stream = stub->ServerReflectionInfo(&context);
    ASSERT_TRUE(stream->Write(Host("x")));
    refl::ServerReflectionResponse answer;
    ASSERT_TRUE(stream->Read(&answer));
    context.TryCancel();  // Mid-stream, a read pending on the server.
    stream->Finish().IgnoreError();
  }
  EXPECT_TRUE(WaitFor([&] { return seen.closed.load() == 20; }));
  EXPECT_EQ(seen.opened.load(), 20);
  runtime.Stop();
  EXPECT_TRUE(runtime.calls_ended());
}

TEST(StreamCallTest, TheLedgerEndsTheStreamBehindItsAnswer) {
  StreamSeen seen;
  TestLeadership leadership;
  DoorOptions options;
  options.peers.max_open[static_cast<int>(CallKind::kReflection)] = 2;
  CallDoor door(&leadership, AdminAuth(), options, core::SystemClock(),
                nullptr);
  Runtime runtime(&door);
  AddEcho(&runtime, &seen);
  runtime.Start();
  auto stub = refl::ServerReflection::NewStub(runtime.channel());
  grpc::ClientContext c1, c2, c3;
  auto s1 = stub->ServerReflectionInfo(&c1);
  auto s2 = stub->ServerReflectionInfo(&c2);
  refl::ServerReflectionResponse answer;
  for (auto* s : {s1.get(), s2.get()}) {
    ASSERT_TRUE(s->Write(Host("x")));
    ASSERT_TRUE(s->Read(&answer));
  }
  // The kind's bound, which this host holds whole: a third is refused at
  // the door, before it opens.
  auto s3 = stub->ServerReflectionInfo(&c3);
  s3->Write(Host("x"));
  EXPECT_FALSE(s3->Read(&answer));
  EXPECT_EQ(s3->Finish().error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  ASSERT_TRUE(
      WaitFor([&] { return door.ledger().open(CallKind::kReflection) == 2u; }));
  door.ledger().AbortAll(CallKind::kReflection,
                         absl::AbortedError("stepped down"));
  for (auto* s : {s1.get(), s2.get()}) {
    EXPECT_FALSE(s->Read(&answer));
    grpc::Status status = s->Finish();
    EXPECT_EQ(status.error_code(), grpc::StatusCode::ABORTED);
    EXPECT_EQ(status.error_message(), "stepped down");
  }
  EXPECT_TRUE(WaitFor([&] { return seen.closed.load() == 2; }));
  EXPECT_TRUE(WaitFor([&] { return door.ledger().open_calls() == 0; }));
}

// Through a door: the first request is due within --request_timeout, and
// every answer is charged to its host's share and the budget until gRPC
// has taken it.
class StreamCallDoorTest : public ::testing::Test {
 protected:
  StreamCallDoorTest() {
    leadership_.term.leading = true;
    options_.max_reply_bytes_in_flight = 1 << 20;
    options_.request_timeout = absl::Milliseconds(300);
    options_.peers.max_reply_bytes_per_peer = 2048;
  }
  // Starts the echo behind a door of options_; a stream to it.
  void Start() {
    door_ = std::make_unique<CallDoor>(&leadership_, AdminAuth(), options_,
                                       core::SystemClock(), nullptr);
    runtime_ = std::make_unique<Runtime>(door_.get());
    AddEcho(runtime_.get(), &seen_);
    runtime_->Start();
    stub_ = refl::ServerReflection::NewStub(runtime_->channel());
    stream_ = stub_->ServerReflectionInfo(&context_);
  }

  TestLeadership leadership_;
  DoorOptions options_;
  StreamSeen seen_;
  std::unique_ptr<CallDoor> door_;
  std::unique_ptr<Runtime> runtime_;
  std::unique_ptr<refl::ServerReflection::Stub> stub_;
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReaderWriter<refl::ServerReflectionRequest,
                                           refl::ServerReflectionResponse>>
      stream_;
};

TEST_F(StreamCallDoorTest, AStreamWithoutARequestIsEndedAtItsDeadline) {
  Start();
  CallDoor& door = *door_;
  StreamSeen& seen = seen_;
  auto& stream = stream_;
  refl::ServerReflectionResponse answer;
  EXPECT_FALSE(stream->Read(&answer));  // Sent nothing; waits.
  const grpc::StatusCode code = stream->Finish().error_code();
  EXPECT_TRUE(code == grpc::StatusCode::DEADLINE_EXCEEDED ||
              code == grpc::StatusCode::CANCELLED)
      << code;
  EXPECT_TRUE(WaitFor([&] { return seen.closed.load() == 1; }));
  EXPECT_EQ(seen.requests.load(), 0);
  EXPECT_TRUE(WaitFor([&] { return door.ledger().open_calls() == 0; }));
}

TEST_F(StreamCallDoorTest, EveryAnswerIsChargedAtTheDoorUntilItIsTaken) {
  Start();
  CallDoor& door = *door_;
  StreamSeen& seen = seen_;
  auto& stream = stream_;
  refl::ServerReflectionResponse answer;
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(stream->Write(Host("x")));
    ASSERT_TRUE(stream->Read(&answer));
  }
  // Each answer was charged until its bytes left for the socket, then
  // given back: with the client idle, nothing is held.
  EXPECT_TRUE(WaitFor([&] { return door.replies().used() == 0; }));
  EXPECT_EQ(door.ledger().open_calls(), 1);
  // One past the host's share (2 KiB) could never fit: refused as such.
  ASSERT_TRUE(stream->Write(Host("big")));
  EXPECT_FALSE(stream->Read(&answer));
  grpc::Status status = stream->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(status.error_message().find("--max_reply_bytes_per_peer (2048)"),
            std::string::npos)
      << status.error_message();
  EXPECT_TRUE(WaitFor([&] { return seen.closed.load() == 1; }));
  EXPECT_EQ(door.replies().used(), 0u);
}

}  // namespace
}  // namespace metasrv::server
