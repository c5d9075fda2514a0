// Limits that hold against one client: flows per report counted as distinct
// ids, flownodes and total flows bounded, streams per connection capped,
// scrapes that idle sockets cannot block, gRPC's log rate-limited, admin
// tokens checked at start, reads bounded and ordered.
#include <grpc/support/log.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "core/clock.h"
#include "gtest/gtest.h"
#include "server/metasrv_server.h"
#include "server/ops/admin_auth.h"
#include "server/ops/log_limit.h"
#include "server/rpc/grpc_log.h"
#include "server/rpc/read_executor.h"
#include "server/rpc/reply_budget.h"
#include "spdlog/sinks/ostream_sink.h"
#include "spdlog/spdlog.h"
#include "tests/server/in_process_server.h"
#include "tests/server/test_util.h"

namespace metasrv::server {
namespace {

using ::metasrv::testing::CapturedLog;

using ::metasrv::testing::Connect;
using ::metasrv::testing::ConnectOwn;
using ::metasrv::testing::ConnectTcp;
using ::metasrv::testing::FlowReport;
using ::metasrv::testing::GetFlowState;
using ::metasrv::testing::HeartbeatClient;
using ::metasrv::testing::HttpGet;
using ::metasrv::testing::Request;
using ::metasrv::testing::WaitFor;
namespace meta = greptime::v1::meta;

std::unique_ptr<MetasrvServer> Start(ServerOptions options) {
  return ::metasrv::testing::StartInProcess(std::move(options));
}

// Sends `request` on a fresh stream; the stream's final status.
grpc::Status SendOnce(const std::shared_ptr<grpc::Channel>& channel,
                      const meta::HeartbeatRequest& request) {
  HeartbeatClient client(channel);
  client.Call(request);
  return client.Close();
}

TEST(HardeningLimitsTest, FlowsPerReportCountsDistinctIdsOverTheThreeMaps) {
  ServerOptions options = ::metasrv::testing::LoopbackOptions();
  options.heartbeat.max_flows_per_report = 5;
  auto server = Start(options);
  ASSERT_NE(server, nullptr);
  auto channel = Connect(server->advertised_addr());
  // Three flows in each map, all different: six flows, though no map has
  // more than three.
  meta::HeartbeatRequest req = Request(meta::FLOWNODE, 1);
  for (uint32_t f = 1; f <= 3; ++f)
    (*req.mutable_flow_stat()->mutable_flow_stat_size())[f] = 1;
  for (uint32_t f = 4; f <= 6; ++f) {
    (*req.mutable_flow_stat()->mutable_flow_last_exec_time_map())[f] = 1;
  }
  grpc::Status s = SendOnce(channel, req);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("has 6 flows"), std::string::npos)
      << s.error_message();
  // The same three ids in both maps are three flows: accepted.
  meta::HeartbeatRequest ok = FlowReport(1, {{1, 1, 1}, {2, 2, 2}, {3, 3, 3}});
  EXPECT_TRUE(SendOnce(channel, ok).ok());
  EXPECT_EQ(GetFlowState(channel).flows.size(), 3u);
}

// Past --max_nodes a new node is refused while every known node is live by
// its reports; once one has been silent past a flownode's limit (here
// 3 x 250 ms + 250 ms), a new node takes its place.
TEST(HardeningLimitsTest, MaxNodesRefusesOnlyTheNewNodeWhileTheOthersLive) {
  ServerOptions options = ::metasrv::testing::LoopbackOptions();
  options.flow_state.max_nodes = 2;
  options.heartbeat.heartbeat_interval = absl::Milliseconds(250);
  options.heartbeat.retry_interval = absl::Milliseconds(250);
  auto server = Start(options);
  ASSERT_NE(server, nullptr);
  auto channel = Connect(server->advertised_addr());
  HeartbeatClient one(channel), two(channel);
  ASSERT_TRUE(one.Call(FlowReport(1, {{1, 10, 1}})).has_value());
  ASSERT_TRUE(two.Call(FlowReport(2, {{2, 20, 2}})).has_value());
  grpc::Status s = SendOnce(channel, FlowReport(3, {{3, 30, 3}}));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(s.error_message().find("--max_nodes"), std::string::npos)
      << s.error_message();
  // A handshake of a new node is refused the same way; known nodes go on.
  EXPECT_EQ(SendOnce(channel, Request(meta::FLOWNODE, 4)).error_code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
  ASSERT_TRUE(one.Call(FlowReport(1, {{1, 11, 1}})).has_value());
  auto state = GetFlowState(channel);
  ASSERT_EQ(state.flows.size(), 2u);
  EXPECT_EQ(state.flows[0].state_size, 11u);
  EXPECT_EQ(state.flows[1].state_size, 20u);
  EXPECT_EQ(server->flow_state().node_count(), 2u);
  // Node 2 falls silent (its stream open or not); node 1 keeps reporting:
  // past node 2's limit, node 3 takes its place.
  EXPECT_TRUE(two.Close().ok());
  ASSERT_TRUE(WaitFor([&] {
    return one.Call(FlowReport(1, {{1, 11, 1}})).has_value() &&
           SendOnce(channel, FlowReport(3, {{3, 30, 3}})).ok();
  }));
  state = GetFlowState(channel);
  ASSERT_EQ(state.flows.size(), 2u);
  EXPECT_EQ(state.flows[0].state_size, 11u);
  EXPECT_EQ(state.flows[1].state_size, 30u);
  EXPECT_EQ(server->flow_state().node_count(), 2u);
  EXPECT_TRUE(one.Close().ok());
}

// A gzip heartbeat of 230 kB with a 3.9 MB host name of control bytes made a
// 23 MB record (escaped) per node: every string a node sends is bounded.
TEST(HardeningLimitsTest, NodeStringsAreBoundedAndOthersStayIntact) {
  auto server = Start(::metasrv::testing::LoopbackOptions());
  ASSERT_NE(server, nullptr);
  auto channel = Connect(server->advertised_addr());
  meta::HeartbeatRequest ok = FlowReport(1, {{1, 10, 1}});
  ok.mutable_peer()->set_addr("10.0.0.1:6800");
  ok.mutable_info()->set_hostname(std::string(kMaxNodeStringBytes, 'h'));
  ASSERT_TRUE(SendOnce(channel, ok).ok());
  for (int field = 0; field < 4; ++field) {
    meta::HeartbeatRequest big = FlowReport(2, {{2, 20, 2}});
    const std::string huge(1 << 20, '\x01');
    switch (field) {
      case 0:
        big.mutable_peer()->set_addr(huge);
        break;
      case 1:
        big.mutable_info()->set_version(huge);
        break;
      case 2:
        big.mutable_info()->set_git_commit(huge);
        break;
      case 3:
        big.mutable_info()->set_hostname(huge);
        break;
    }
    grpc::ChannelArguments args;
    args.SetMaxSendMessageSize(-1);
    auto own = ConnectOwn(server->advertised_addr(), args);
    grpc::Status s = SendOnce(own, big);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << field;
    EXPECT_NE(s.error_message().find("more than the limit of 256"),
              std::string::npos)
        << s.error_message();
  }
  // Nothing of node 2 was kept; node 1 is as it was.
  EXPECT_EQ(server->flow_state().node_count(), 1u);
  auto state = GetFlowState(channel);
  ASSERT_EQ(state.flows.size(), 1u);
  EXPECT_EQ(state.flows[0].state_size, 10u);
}

// An answer larger than the whole reply budget can never be sent: a
// permanent error that says to ask for less, not "retry later".
TEST(HardeningLimitsTest, AnAnswerLargerThanTheBudgetIsAPermanentError) {
  ServerOptions options = ::metasrv::testing::LoopbackOptions();
  options.door.max_reply_bytes_in_flight = 64 << 10;
  auto server = Start(options);
  ASSERT_NE(server, nullptr);
  auto channel = Connect(server->advertised_addr());
  std::vector<std::tuple<uint32_t, uint64_t, int64_t>> flows;
  for (uint32_t id = 0; id < 20000; ++id) flows.emplace_back(id, 1 << 20, 1);
  ASSERT_TRUE(SendOnce(channel, FlowReport(1, flows)).ok());
  auto stub = metasrv::v1::FlowState::NewStub(channel);
  grpc::ClientContext ctx;
  metasrv::v1::GetFlowStateResponse resp;
  grpc::Status s = stub->GetFlowState(&ctx, {}, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(s.error_message().find("ask for fewer"), std::string::npos)
      << s.error_message();
  // A read that fits is served.
  grpc::ClientContext small_ctx;
  metasrv::v1::GetFlowStateRequest some;
  some.add_flow_ids(7);
  ASSERT_TRUE(stub->GetFlowState(&small_ctx, some, &resp).ok());
  EXPECT_EQ(resp.flow_ids_size(), 1);
}

TEST(HardeningLimitsTest, MaxTotalFlowsRefusesGrowthNotReplacement) {
  ServerOptions options = ::metasrv::testing::LoopbackOptions();
  options.flow_state.max_total_flows = 10;
  auto server = Start(options);
  ASSERT_NE(server, nullptr);
  auto channel = Connect(server->advertised_addr());
  std::vector<std::tuple<uint32_t, uint64_t, int64_t>> six_a, six_b, four_b;
  for (uint32_t f = 0; f < 6; ++f) six_a.push_back({f, 1, 1});
  for (uint32_t f = 100; f < 106; ++f) six_b.push_back({f, 2, 2});
  for (uint32_t f = 100; f < 104; ++f) four_b.push_back({f, 3, 3});
  ASSERT_TRUE(SendOnce(channel, FlowReport(1, six_a)).ok());
  grpc::Status s = SendOnce(channel, FlowReport(2, six_b));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(s.error_message().find("--max_total_flows"), std::string::npos)
      << s.error_message();
  EXPECT_EQ(GetFlowState(channel).flows.size(), 6u);
  // Up to the limit is fine, and a node may always resend as many as before.
  EXPECT_TRUE(SendOnce(channel, FlowReport(2, four_b)).ok());
  EXPECT_TRUE(SendOnce(channel, FlowReport(1, six_a)).ok());
  EXPECT_EQ(GetFlowState(channel).flows.size(), 10u);
}

TEST(HardeningLimitsTest, OneConnectionCannotTakeEveryStream) {
  ServerOptions options = ::metasrv::testing::LoopbackOptions();
  options.max_streams = 20;
  options.transport.limits.max_concurrent_streams = 10;
  auto server = Start(options);
  ASSERT_NE(server, nullptr);
  // One connection asks for 11 streams: only 10 may be open on it (the
  // client holds the 11th back until a slot frees).
  auto greedy = ConnectOwn(server->advertised_addr());
  absl::Notification release;
  std::atomic<int> opened{0};
  std::vector<std::thread> openers;
  for (int i = 0; i < 11; ++i) {
    openers.emplace_back([&, i] {
      HeartbeatClient stream(greedy);
      if (stream.Call(Request(meta::FLOWNODE, 100 + i)).has_value())
        opened.fetch_add(1);
      release.WaitForNotification();
      stream.Cancel();
    });
  }
  ASSERT_TRUE(WaitFor([&] { return opened.load() == 10; }));
  // A real flownode on its own connection still gets in.
  auto honest = ConnectOwn(server->advertised_addr());
  HeartbeatClient flownode(honest);
  EXPECT_TRUE(flownode.Call(FlowReport(1, {{1, 1, 1}})).has_value());
  EXPECT_EQ(server->heartbeat_streams(), 11u);
  EXPECT_EQ(opened.load(), 10);
  // Releasing the greedy connection's streams is quick.
  const absl::Time start = absl::Now();
  release.Notify();
  for (std::thread& t : openers) t.join();
  ASSERT_TRUE(WaitFor([&] { return server->heartbeat_streams() == 1; }));
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
  EXPECT_EQ(opened.load(), 11);  // The 11th got its slot once one was free.
}

TEST(HardeningHttpTest, ScrapesWorkWithAHundredIdleSockets) {
  ServerOptions options = ::metasrv::testing::LoopbackOptions();
  options.metrics_addr = "127.0.0.1:0";
  auto server = Start(options);
  ASSERT_NE(server, nullptr);
  std::vector<int> idle;
  for (int i = 0; i < 100; ++i) {
    const int fd =
        ConnectTcp(absl::StrCat("127.0.0.1:", server->metrics_port()));
    ASSERT_GE(fd, 0);
    idle.push_back(fd);
  }
  const absl::Time start = absl::Now();
  auto metrics = HttpGet(server->metrics_port(), "/metrics");
  EXPECT_EQ(metrics.status, 200);
  EXPECT_NE(metrics.body.find("metasrv_is_leader 1"), std::string::npos);
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
  auto health = HttpGet(server->metrics_port(), "/health");
  EXPECT_EQ(health.status, 200);
  auto ready = HttpGet(server->metrics_port(), "/ready");
  EXPECT_EQ(ready.status, 200);
  EXPECT_EQ(ready.body, "leader\n");
  // GreptimeDB's admin paths, answered as a standalone upstream metasrv
  // answers them (no election).
  auto admin_health = HttpGet(server->metrics_port(), "/admin/health");
  EXPECT_EQ(admin_health.status, 200);
  EXPECT_EQ(admin_health.body, "OK\n");
  auto admin_leader = HttpGet(server->metrics_port(), "/admin/leader");
  EXPECT_EQ(admin_leader.status, 200);
  EXPECT_EQ(admin_leader.body, "election info is None");
  EXPECT_EQ(HttpGet(server->metrics_port(), "/nope").status, 404);
  for (int fd : idle) close(fd);
}

TEST(HardeningHttpTest, ATakenMetricsPortNamesTheFlag) {
  ServerOptions first = ::metasrv::testing::LoopbackOptions();
  first.metrics_addr = "127.0.0.1:0";
  auto a = Start(first);
  ASSERT_NE(a, nullptr);
  ServerOptions second = ::metasrv::testing::LoopbackOptions();
  second.bind_addr = "127.0.0.1:0";
  second.metrics_addr = absl::StrCat("127.0.0.1:", a->metrics_port());
  auto b = MetasrvServer::Start(second);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(b.status().message().find("--metrics_addr"), std::string::npos)
      << b.status();
}

// A flownode connecting and leaving is logged at info, each node its own
// lines (issue 38: eight flownodes reconnecting after a failover were one
// line); the bound over all nodes is LogLimitTest's.
TEST(HardeningLogTest, EveryFlownodeConnectingAndLeavingIsLogged) {
  CapturedLog log;
  SetLogLineInterval(absl::Hours(1));
  auto server = Start(::metasrv::testing::LoopbackOptions());
  ASSERT_NE(server, nullptr);
  auto channel = Connect(server->advertised_addr());
  const uint64_t before = LogLinesSuppressed();
  std::vector<std::unique_ptr<HeartbeatClient>> nodes;
  for (uint64_t id = 1; id <= 3; ++id) {
    nodes.push_back(std::make_unique<HeartbeatClient>(channel));
    ASSERT_TRUE(nodes.back()->Call(Request(meta::FLOWNODE, id)).has_value());
  }
  HeartbeatClient frontend(channel);  // Not a flownode: not logged.
  ASSERT_TRUE(frontend.Call(Request(meta::FRONTEND, 9)).has_value());
  for (auto& node : nodes) ASSERT_TRUE(node->Close().ok());
  ASSERT_TRUE(frontend.Close().ok());
  ASSERT_TRUE(WaitFor([&] { return server->heartbeat_streams() == 0; }));
  const uint64_t left_out = LogLinesSuppressed() - before;
  server.reset();
  SetLogLineInterval(absl::Seconds(10));
  const std::string text = log.Restore();
  EXPECT_NE(text.find("flownode 1 connected from ipv4:127.0.0.1:"),
            std::string::npos)
      << text;
  for (int id = 1; id <= 3; ++id) {
    EXPECT_NE(text.find(absl::StrCat("flownode ", id, " connected from")),
              std::string::npos)
        << text;
    EXPECT_NE(text.find(absl::StrCat("flownode ", id, " (from ")),
              std::string::npos)
        << text;
  }
  EXPECT_EQ(text.find("flownode 9"), std::string::npos) << text;
  EXPECT_EQ(left_out, 0u);
}

TEST(HardeningLogTest, GrpcLinesAreRateLimitedPerPlace) {
  CapturedLog log;
  RouteGrpcLogsToSpdlog(absl::Hours(1));
  const uint64_t before = GrpcLogLinesSuppressed();
  // A failed TLS handshake per connection, say, from one place in gRPC.
  for (int i = 0; i < 100; ++i) gpr_log(GPR_ERROR, "handshake failed %d", i);
  const std::string text = log.Restore();
  // A short burst, then one line per interval.
  EXPECT_NE(text.find("handshake failed 2"), std::string::npos) << text;
  EXPECT_EQ(text.find("handshake failed 3"), std::string::npos) << text;
  EXPECT_EQ(GrpcLogLinesSuppressed() - before, 97u);
}

// 25,175 unauthenticated LeaderChange calls in 10 s wrote 25,175 warning
// lines; streams refused past --max_streams one each. Per-request lines are
// a burst of kLogLineBurst per event and client host, then one per
// interval, the rest counted in a metric.
TEST(HardeningLogTest, PerRequestLinesAreRateLimited) {
  CapturedLog log;
  SetLogLineInterval(absl::Hours(1));
  ServerOptions options = ::metasrv::testing::LoopbackOptions();
  options.max_streams = 1;
  options.metrics_addr = "127.0.0.1:0";
  // Wrong tokens answered at once: the lines are what is measured.
  options.door.auth_backoff.free_failures = 1000;
  options.door.auth_backoff.failed_answers_per_second = 0;
  char token_path[] = "/tmp/metasrv-token-XXXXXX";
  const int fd = mkstemp(token_path);
  ASSERT_GE(fd, 0);
  close(fd);
  std::ofstream(token_path) << "0123456789abcdef0123456789abcdef\n";
  options.admin_token_file = token_path;
  auto server = Start(options);
  ASSERT_NE(server, nullptr);
  const uint64_t before = LogLinesSuppressed();
  auto admin = metasrv::v1::Admin::NewStub(Connect(server->advertised_addr()));
  for (int i = 0; i < 200; ++i) {
    grpc::ClientContext ctx;
    metasrv::v1::LeaderChangeResponse resp;
    EXPECT_EQ(admin->LeaderChange(&ctx, {}, &resp).error_code(),
              grpc::StatusCode::UNAUTHENTICATED)
        << i;
  }
  HeartbeatClient holder(Connect(server->advertised_addr()));
  ASSERT_TRUE(holder.Call(Request(meta::FLOWNODE, 1)).has_value());
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(SendOnce(ConnectOwn(server->advertised_addr()),
                       Request(meta::FLOWNODE, 2))
                  .error_code(),
              grpc::StatusCode::RESOURCE_EXHAUSTED);
  }
  const std::string metrics = HttpGet(server->metrics_port(), "/metrics").body;
  holder.Close().IgnoreError();
  server.reset();
  SetLogLineInterval(absl::Seconds(10));
  unlink(token_path);
  const std::string text = log.Restore();
  auto count = [&text](const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos;
         at = text.find(what, at + 1)) {
      ++n;
    }
    return n;
  };
  // The burst of the failures; of the streams refused at the door.
  EXPECT_EQ(count("admin call LeaderChange"), 1u * kLogLineBurst) << text;
  EXPECT_EQ(count("call Heartbeat from"), 1u * kLogLineBurst) << text;
  EXPECT_EQ(LogLinesSuppressed() - before,
            (200u - kLogLineBurst) + (100u - kLogLineBurst));
  EXPECT_NE(metrics.find("metasrv_log_lines_suppressed_total"),
            std::string::npos);
}

TEST(HardeningAdminTokenTest, ATokenThatCannotTravelInAHeaderIsRefusedAtStart) {
  auto refused = AdminAuth::FromToken(std::string("abc\x01") + "def\n", "f");
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("offset 3"), std::string::npos);
  refused = AdminAuth::FromToken(std::string(5000, 'a'), "f");
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("5000 bytes"), std::string::npos);
  EXPECT_TRUE(AdminAuth::FromToken("  0123456789abcdef\n", "f").ok());
  // Shorter than 16 bytes: guessable, or a file caught half-written.
  refused = AdminAuth::FromToken("0123456789abcde\n", "f");
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("15 bytes; at least 16"),
            std::string::npos);
  EXPECT_EQ(AdminAuth::FromToken("ab", "f").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(HardeningBudgetTest, RepliesFitTheBudgetOrAreRefused) {
  ReplyBudget budget(100);
  EXPECT_TRUE(budget.TryTake(60));
  EXPECT_FALSE(budget.TryTake(41));
  EXPECT_TRUE(budget.TryTake(40));
  EXPECT_EQ(budget.used(), 100u);
  budget.Give(60);
  EXPECT_TRUE(budget.TryTake(41));
}

TEST(HardeningBudgetTest, ChargesPassTheLimitAndAreGivenBackWhenDropped) {
  ReplyBudget budget(100);
  {
    ReplyCharge held(&budget, 150);  // Held anyway: taken past the limit.
    EXPECT_EQ(budget.used(), 150u);
    EXPECT_TRUE(budget.Exceeded());
    EXPECT_FALSE(budget.TryTake(1));  // Other answers wait meanwhile.
    ReplyCharge moved = std::move(held);
    EXPECT_EQ(budget.used(), 150u);  // Moving keeps one charge.
    moved = ReplyCharge(&budget, 30);
    EXPECT_EQ(budget.used(), 30u);  // The old one was given back.
    EXPECT_FALSE(budget.Exceeded());
  }
  EXPECT_EQ(budget.used(), 0u);
  ReplyCharge unbounded(nullptr, 1000);  // No budget: nothing kept.
  EXPECT_EQ(unbounded.bytes(), 0u);
}

TEST(HardeningReadExecutorTest, QueuesAreBoundedAndSmallReadsGoFirst) {
  ReadExecutor reads({2, 2, 2});
  absl::Notification release;
  std::atomic<int> large_running{0};
  std::vector<std::string> order;
  absl::Mutex order_mu;
  // One large read holds the one worker large reads may use.
  ASSERT_TRUE(reads
                  .Schedule(ReadCost::kLarge,
                            [&] {
                              large_running.fetch_add(1);
                              release.WaitForNotification();
                            })
                  .ok());
  ASSERT_TRUE(WaitFor([&] { return large_running.load() == 1; }));
  ASSERT_TRUE(reads
                  .Schedule(ReadCost::kLarge,
                            [&] {
                              absl::MutexLock lock(&order_mu);
                              order.push_back("large");
                            })
                  .ok());
  ASSERT_TRUE(reads.Schedule(ReadCost::kLarge, [] {}).ok());
  // The large queue is full (2): refused, not queued.
  EXPECT_EQ(reads.Schedule(ReadCost::kLarge, [] {}).code(),
            absl::StatusCode::kResourceExhausted);
  // A small read runs on the other worker at once, large ones waiting.
  absl::Notification small_ran;
  ASSERT_TRUE(reads
                  .Schedule(ReadCost::kSmall,
                            [&] {
                              {
                                absl::MutexLock lock(&order_mu);
                                order.push_back("small");
                              }
                              small_ran.Notify();
                            })
                  .ok());
  EXPECT_TRUE(small_ran.WaitForNotificationWithTimeout(absl::Seconds(10)));
  release.Notify();
  ASSERT_TRUE(WaitFor([&] { return reads.queued(ReadCost::kLarge) == 0; }));
  ASSERT_TRUE(WaitFor([&] {
    absl::MutexLock lock(&order_mu);
    return order.size() == 2;
  }));
  absl::MutexLock lock(&order_mu);
  EXPECT_EQ(order[0], "small");
  EXPECT_EQ(order[1], "large");
}

// The per-stream and per-report limits (moved from ops_test.cc: they are
// the server's limits, not ops/).
TEST(LimitsTest, StreamLimitRefusesOnlyTheNewStream) {
  ServerOptions options = ::metasrv::testing::LoopbackOptions();
  options.max_streams = 2;
  auto server = Start(options);
  ASSERT_NE(server, nullptr);
  auto channel = Connect(server->advertised_addr());
  HeartbeatClient a(channel), b(channel);
  ASSERT_TRUE(a.Call(FlowReport(1, {{1, 1, 1}})).has_value());
  ASSERT_TRUE(b.Call(FlowReport(2, {{2, 2, 2}})).has_value());
  {
    HeartbeatClient c(channel);
    EXPECT_FALSE(c.Call(Request(meta::FLOWNODE, 3)).has_value());
    grpc::Status s = c.Close();
    EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
    EXPECT_NE(s.error_message().find("limit 2"), std::string::npos);
  }
  EXPECT_TRUE(a.Call(FlowReport(1, {{1, 5, 5}})).has_value());
  EXPECT_TRUE(b.Call(FlowReport(2, {{2, 6, 6}})).has_value());
  EXPECT_EQ(GetFlowState(channel).flows.size(), 2u);
}

// Starts a server with `options`, records a report of node 1, then sends
// `bad` on the same stream: it must end with `code` (and a message containing
// `message`), and the previous report must stay.
void ExpectRefusedAndPreviousReportKept(
    ServerOptions options,
    const std::vector<std::tuple<uint32_t, uint64_t, int64_t>>& bad,
    grpc::StatusCode code, const std::string& message) {
  auto server = Start(options);
  ASSERT_NE(server, nullptr);
  auto channel = Connect(server->advertised_addr());
  HeartbeatClient client(channel);
  ASSERT_TRUE(client.Call(FlowReport(1, {{1, 100, 1}})).has_value());
  EXPECT_FALSE(client.Call(FlowReport(1, bad)).has_value());
  grpc::Status s = client.Close();
  EXPECT_EQ(s.error_code(), code);
  EXPECT_NE(s.error_message().find(message), std::string::npos)
      << s.error_message();
  auto state = GetFlowState(channel);
  ASSERT_EQ(state.flows.size(), 1u);
  EXPECT_EQ(state.flows[0].state_size, 100u);
}

TEST(LimitsTest, TooManyFlowsIsInvalidArgumentAndKeepsThePreviousReport) {
  ServerOptions options = ::metasrv::testing::LoopbackOptions();
  options.heartbeat.max_flows_per_report = 5;
  std::vector<std::tuple<uint32_t, uint64_t, int64_t>> six;
  for (uint32_t f = 10; f < 16; ++f) six.push_back({f, 1, 1});
  ExpectRefusedAndPreviousReportKept(options, six,
                                     grpc::StatusCode::INVALID_ARGUMENT,
                                     "more than the limit of 5");
}

TEST(LimitsTest, OversizedMessageIsRefusedAndChangesNothing) {
  ServerOptions options = ::metasrv::testing::LoopbackOptions();
  options.transport.limits.max_message_bytes = 1024;
  std::vector<std::tuple<uint32_t, uint64_t, int64_t>> many;
  for (uint32_t f = 0; f < 500; ++f) many.push_back({f, 1, 1});
  ExpectRefusedAndPreviousReportKept(options, many,
                                     grpc::StatusCode::RESOURCE_EXHAUSTED, "");
}

}  // namespace
}  // namespace metasrv::server
