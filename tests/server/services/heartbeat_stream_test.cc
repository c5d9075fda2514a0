// Heartbeat stream behaviour: bad requests, vanishing clients, shutdown and
// many concurrent streams, against an in-process server.
#include <thread>

#include "gtest/gtest.h"
#include "server/metasrv_server.h"
#include "tests/server/in_process_server.h"
#include "tests/server/test_util.h"

namespace metasrv::server {
namespace {

using ::metasrv::testing::Connect;
using ::metasrv::testing::ConnectOwn;
using ::metasrv::testing::FlowReport;
using ::metasrv::testing::GetFlowState;
using ::metasrv::testing::HeartbeatClient;
using ::metasrv::testing::IsServing;
using ::metasrv::testing::Request;
using ::metasrv::testing::WaitFor;
namespace meta = greptime::v1::meta;

using HeartbeatStreamTest = ::metasrv::testing::InProcessServerTest;

TEST_F(HeartbeatStreamTest, HeaderlessFirstRequestEndsStream) {
  HeartbeatClient client(channel_);
  EXPECT_FALSE(client.Call(meta::HeartbeatRequest()).has_value());
  grpc::Status s = client.Close();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("no header"), std::string::npos);
}

TEST_F(HeartbeatStreamTest, HeaderlessLaterRequestEndsStreamAndKeepsState) {
  HeartbeatClient client(channel_);
  ASSERT_TRUE(client.Call(Request(meta::FLOWNODE, 1)).has_value());
  ASSERT_TRUE(client.Call(FlowReport(1, {{1, 11, 111}})).has_value());
  meta::HeartbeatRequest bad = FlowReport(1, {{2, 22, 222}});
  bad.clear_header();
  EXPECT_FALSE(client.Call(bad).has_value());
  EXPECT_EQ(client.Close().error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  auto state = GetFlowState(channel_);
  ASSERT_EQ(state.flows.size(), 1);
  EXPECT_EQ(state.flows[0].state_size, 11u);
}

TEST_F(HeartbeatStreamTest, UnknownRoleEndsStream) {
  HeartbeatClient client(channel_);
  meta::HeartbeatRequest req = Request(meta::FLOWNODE, 1);
  req.mutable_header()->set_role(static_cast<meta::Role>(9));
  EXPECT_FALSE(client.Call(req).has_value());
  grpc::Status s = client.Close();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("unknown role 9"), std::string::npos);
}

TEST_F(HeartbeatStreamTest, VanishingClientLeavesOthersHealthy) {
  HeartbeatClient stays(channel_);
  ASSERT_TRUE(stays.Call(Request(meta::FLOWNODE, 1)).has_value());
  {
    HeartbeatClient leaves(channel_);
    ASSERT_TRUE(leaves.Call(Request(meta::FLOWNODE, 2)).has_value());
    ASSERT_TRUE(leaves.Call(FlowReport(2, {{20, 2, 2}})).has_value());
    EXPECT_EQ(server_->heartbeat_streams(), 2u);
    leaves.Cancel();
  }
  EXPECT_TRUE(WaitFor([&] { return server_->heartbeat_streams() == 1; }));
  ASSERT_TRUE(stays.Call(FlowReport(1, {{10, 1, 1}})).has_value());
  EXPECT_TRUE(IsServing(channel_));
  // The vanished node's last report is kept, like any node's.
  EXPECT_EQ(GetFlowState(channel_).flows.size(), 2);
  EXPECT_TRUE(stays.Close().ok());
}

TEST_F(HeartbeatStreamTest, ShutdownEndsOpenStreamsPromptly) {
  HeartbeatClient client(channel_);
  ASSERT_TRUE(client.Call(Request(meta::FLOWNODE, 1)).has_value());
  const absl::Time start = absl::Now();
  server_->Shutdown();
  server_->Wait();
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
  EXPECT_FALSE(client.Call(Request(meta::FLOWNODE, 1)).has_value());
  EXPECT_EQ(client.Close().error_code(), grpc::StatusCode::UNAVAILABLE);
}

// 1,000 streams open at once, each sending reports; every report must be
// reflected in the aggregate and nothing lost.
TEST_F(HeartbeatStreamTest, ThousandConcurrentStreams) {
  constexpr int kThreads = 4, kPerThread = 250, kRounds = 3;
  std::vector<std::thread> threads;
  std::atomic<int> opened{0}, failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto channel = ConnectOwn(server_->advertised_addr());
      std::vector<std::unique_ptr<HeartbeatClient>> clients;
      for (int i = 0; i < kPerThread; ++i) {
        const uint64_t node = t * kPerThread + i;
        clients.push_back(std::make_unique<HeartbeatClient>(channel));
        if (!clients.back()->Call(Request(meta::FLOWNODE, node))) ++failures;
        ++opened;
      }
      // Wait until every thread's streams are open, so all 1,000 overlap.
      WaitFor([&] { return opened.load() == kThreads * kPerThread; });
      for (int r = 1; r <= kRounds; ++r) {
        for (int i = 0; i < kPerThread; ++i) {
          const uint64_t node = t * kPerThread + i;
          const uint32_t flow = static_cast<uint32_t>(node);
          if (!clients[i]->Call(FlowReport(node, {{flow, node * 10 + r, r}}))) {
            ++failures;
          }
        }
      }
      for (auto& c : clients) {
        if (!c->Close().ok()) ++failures;
      }
    });
  }
  EXPECT_TRUE(WaitFor([&] { return server_->heartbeat_streams() == 1000u; },
                      absl::Seconds(60)));
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  auto state = GetFlowState(channel_);
  ASSERT_EQ(state.flows.size(), kThreads * kPerThread);
  for (const auto& flow : state.flows) {
    EXPECT_EQ(flow.state_size, flow.flow_id * 10u + kRounds);
    EXPECT_EQ(flow.last_exec_time_ms, kRounds);
  }
  EXPECT_TRUE(WaitFor([&] { return server_->heartbeat_streams() == 0u; }));
}

}  // namespace
}  // namespace metasrv::server
