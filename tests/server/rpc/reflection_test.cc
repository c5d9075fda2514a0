// Server reflection, through the reflection proto Debian's grpc-proto ships:
// what grpcurl relies on for `list` and `describe`.
#include <google/protobuf/descriptor.pb.h>

#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "grpc/reflection/v1/reflection.grpc.pb.h"
#include "grpc/reflection/v1alpha/reflection.grpc.pb.h"
#include "gtest/gtest.h"
#include "tests/server/test_util.h"

namespace metasrv::testing {
namespace {

namespace refl = grpc::reflection::v1alpha;

class ReflectionTest : public ::testing::Test {
 protected:
  refl::ServerReflectionResponse Ask(const refl::ServerReflectionRequest& req) {
    auto stub = refl::ServerReflection::NewStub(server_.channel());
    grpc::ClientContext ctx;
    auto stream = stub->ServerReflectionInfo(&ctx);
    refl::ServerReflectionResponse resp;
    EXPECT_TRUE(stream->Write(req));
    EXPECT_TRUE(stream->Read(&resp));
    stream->WritesDone();
    EXPECT_TRUE(stream->Finish().ok());
    return resp;
  }

  ServerProcess server_;
};

TEST_F(ReflectionTest, ListsEveryService) {
  refl::ServerReflectionRequest req;
  req.set_list_services("");
  refl::ServerReflectionResponse resp = Ask(req);
  std::set<std::string> names;
  for (const auto& s : resp.list_services_response().service())
    names.insert(s.name());
  for (const char* want :
       {"greptime.v1.meta.Heartbeat", "greptime.v1.meta.Cluster",
        "metasrv.v1.FlowState", "metasrv.v1.Admin", "grpc.health.v1.Health",
        "grpc.reflection.v1alpha.ServerReflection"}) {
    EXPECT_EQ(names.count(want), 1u) << want;
  }
}

TEST_F(ReflectionTest, DescribesTheHeartbeatService) {
  refl::ServerReflectionRequest req;
  req.set_file_containing_symbol("greptime.v1.meta.Heartbeat");
  refl::ServerReflectionResponse resp = Ask(req);
  ASSERT_GE(resp.file_descriptor_response().file_descriptor_proto_size(), 1);
  google::protobuf::FileDescriptorProto file;
  ASSERT_TRUE(file.ParseFromString(
      resp.file_descriptor_response().file_descriptor_proto(0)));
  EXPECT_EQ(file.name(), "greptime/v1/meta/heartbeat.proto");
  EXPECT_EQ(file.package(), "greptime.v1.meta");
  ASSERT_EQ(file.service_size(), 1);
  const auto& method = file.service(0).method(0);
  EXPECT_EQ(method.name(), "Heartbeat");
  EXPECT_TRUE(method.client_streaming());
  EXPECT_TRUE(method.server_streaming());
  bool found_flow_stat = false;
  for (const auto& msg : file.message_type()) {
    if (msg.name() != "HeartbeatRequest") continue;
    for (const auto& field : msg.field()) {
      if (field.name() == "flow_stat") {
        found_flow_stat = true;
        EXPECT_EQ(field.number(), 9);
      }
    }
  }
  EXPECT_TRUE(found_flow_stat);
}

// What grpcurl does for `list` then `describe`, through either version:
// every listed service must resolve to a file that declares it.
template <typename Service, typename Request, typename Response>
void DescribeEveryListedService(const std::shared_ptr<grpc::Channel>& channel) {
  auto stub = Service::NewStub(channel);
  grpc::ClientContext ctx;
  auto stream = stub->ServerReflectionInfo(&ctx);
  Request req;
  req.set_list_services("");
  Response resp;
  ASSERT_TRUE(stream->Write(req));
  ASSERT_TRUE(stream->Read(&resp));
  std::vector<std::string> services;
  for (const auto& s : resp.list_services_response().service())
    services.push_back(s.name());
  EXPECT_GE(services.size(), 7u);
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
  // One stream per service: v1alpha leaves out files it sent before on the
  // same stream.
  for (const std::string& service : services) {
    grpc::ClientContext describe_ctx;
    auto describe = stub->ServerReflectionInfo(&describe_ctx);
    Request ask;
    ask.set_file_containing_symbol(service);
    ASSERT_TRUE(describe->Write(ask));
    Response answer;
    ASSERT_TRUE(describe->Read(&answer));
    ASSERT_FALSE(answer.has_error_response())
        << service << ": " << answer.error_response().error_message();
    ASSERT_GE(answer.file_descriptor_response().file_descriptor_proto_size(), 1)
        << service;
    google::protobuf::FileDescriptorProto file;
    ASSERT_TRUE(file.ParseFromString(
        answer.file_descriptor_response().file_descriptor_proto(0)));
    bool declared = false;
    for (const auto& svc : file.service()) {
      declared = declared || file.package() + "." + svc.name() == service;
    }
    EXPECT_TRUE(declared) << service << " not in " << file.name();
    describe->WritesDone();
    EXPECT_TRUE(describe->Finish().ok());
  }
}

TEST_F(ReflectionTest, EveryListedServiceCanBeDescribedThroughV1alpha) {
  namespace v = grpc::reflection::v1alpha;
  DescribeEveryListedService<v::ServerReflection, v::ServerReflectionRequest,
                             v::ServerReflectionResponse>(server_.channel());
}

// Current grpcurl and buf curl ask v1 first.
TEST_F(ReflectionTest, EveryListedServiceCanBeDescribedThroughV1) {
  namespace v = grpc::reflection::v1;
  DescribeEveryListedService<v::ServerReflection, v::ServerReflectionRequest,
                             v::ServerReflectionResponse>(server_.channel());
}

// The server's threads, from /proc.
int Threads(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("Threads:", 0) == 0) return std::stoi(line.substr(8));
  }
  return -1;
}

// gRPC 1.51's own v1alpha service held an OS thread per open stream (2,000
// idle streams: 2,013 threads); both versions are callback reactors now.
TEST_F(ReflectionTest, IdleStreamsOfEitherVersionTakeNoThread) {
  const int before = Threads(server_.process().pid());
  ASSERT_GT(before, 0);
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
  std::vector<std::unique_ptr<grpc::ClientReaderWriter<
      refl::ServerReflectionRequest, refl::ServerReflectionResponse>>>
      alpha;
  auto stub = refl::ServerReflection::NewStub(server_.channel());
  for (int i = 0; i < 200; ++i) {
    contexts.push_back(std::make_unique<grpc::ClientContext>());
    alpha.push_back(stub->ServerReflectionInfo(contexts.back().get()));
  }
  // Every stream is open at the server: one answer on the last proves it.
  refl::ServerReflectionRequest req;
  req.set_list_services("");
  refl::ServerReflectionResponse resp;
  ASSERT_TRUE(alpha.back()->Write(req));
  ASSERT_TRUE(alpha.back()->Read(&resp));
  EXPECT_LT(Threads(server_.process().pid()), before + 20);
  for (auto& ctx : contexts) ctx->TryCancel();
  for (auto& stream : alpha) stream->Finish().IgnoreError();
}

// A 4 MB symbol in a few kB of gzip was answered with the whole symbol
// echoed back (and the server's memory with it, 5,000 times what was sent).
// A long name is refused without the echo, however it came (gzip or zstd
// inflate within the message bound).
TEST_F(ReflectionTest, LongNamesAreRefusedWithoutAnEcho) {
  auto stub = refl::ServerReflection::NewStub(server_.channel());
  grpc::ClientContext ctx;
  auto stream = stub->ServerReflectionInfo(&ctx);
  refl::ServerReflectionRequest req;
  req.set_file_containing_symbol(std::string(1 << 20, 'a'));
  refl::ServerReflectionResponse resp;
  ASSERT_TRUE(stream->Write(req));
  ASSERT_TRUE(stream->Read(&resp));
  EXPECT_EQ(resp.error_response().error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_FALSE(resp.has_original_request());
  EXPECT_LT(resp.ByteSizeLong(), 512u);
  // A name of ordinary length is still found.
  req.set_file_containing_symbol("metasrv.v1.FlowState");
  ASSERT_TRUE(stream->Write(req));
  ASSERT_TRUE(stream->Read(&resp));
  EXPECT_FALSE(resp.has_error_response());
  EXPECT_EQ(resp.original_request().file_containing_symbol(),
            "metasrv.v1.FlowState");
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
}

// Reflection answers are charged through the door like every other answer:
// one larger than the whole budget, or than its host's share, could never
// fit, and is refused as such.
void ExpectRefusedAsTooLarge(const std::string& flag,
                             const std::string& named) {
  ServerProcess server({flag});
  auto stub = refl::ServerReflection::NewStub(server.channel());
  grpc::ClientContext ctx;
  auto stream = stub->ServerReflectionInfo(&ctx);
  refl::ServerReflectionRequest req;
  req.set_file_containing_symbol("greptime.v1.meta.Cluster");  // > 1 KiB.
  ASSERT_TRUE(stream->Write(req));
  refl::ServerReflectionResponse resp;
  EXPECT_FALSE(stream->Read(&resp));
  grpc::Status s = stream->Finish();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION)
      << s.error_message();
  EXPECT_NE(s.error_message().find(named), std::string::npos)
      << s.error_message();
}

TEST(ReflectionBudgetTest, AnswersAreChargedToTheReplyBudget) {
  ExpectRefusedAsTooLarge("--max_reply_bytes_in_flight=1024",
                          "--max_reply_bytes_in_flight (1024)");
}

TEST(ReflectionBudgetTest, AnswersAreChargedToTheHostsShare) {
  ExpectRefusedAsTooLarge("--max_reply_bytes_per_peer=1024",
                          "--max_reply_bytes_per_peer (1024)");
}

}  // namespace
}  // namespace metasrv::testing
