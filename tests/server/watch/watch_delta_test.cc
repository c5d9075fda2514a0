// End to end over gRPC: WatchFlowState with deltas (changes only).
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "metasrv/v1/metasrv.grpc.pb.h"
#include "tests/server/in_process_server.h"
#include "tests/server/test_util.h"
#include "tests/server/watch_client.h"

namespace metasrv::testing {
namespace {

using metasrv::v1::WatchFlowStateResponse;
using ::testing::ElementsAre;
using Messages = std::vector<WatchFlowStateResponse>;

class WatchDeltaTest : public InProcessServerTest {
 protected:
  server::ServerOptions Options() override {
    server::ServerOptions options = InProcessServerTest::Options();
    options.watch.min_interval = absl::Milliseconds(5);
    // A watcher held unread for a whole test (slower under ASan than the
    // default 5 s) is not a stalled one here: on the nghttp2 transport a
    // write past the limit ends its stream whatever the budget.
    options.door.reply_stall_limit = absl::Minutes(1);
    return options;
  }
  void SetUp() override {
    InProcessServerTest::SetUp();
    stub_ = metasrv::v1::FlowState::NewStub(channel_);
  }
  // Waits until `watcher`'s applied view equals GetFlowState's.
  bool Converges(WatchClient& watcher) {
    const std::map<uint32_t, std::string> want = ReadFlows(channel_);
    return watcher.WaitFor([&](const Messages& m) {
      return !m.empty() && WatchedFlows(m) == want;
    });
  }

  std::unique_ptr<metasrv::v1::FlowState::Stub> stub_;
};

TEST_F(WatchDeltaTest, WholeStateFirstThenOnlyWhatChanged) {
  HeartbeatClient node1(channel_), node2(channel_);
  ASSERT_TRUE(node1.Call(FlowReport(1, {{1, 100, 10}, {2, 200, 20}})));
  ASSERT_TRUE(node2.Call(FlowReport(2, {{3000, 5, 5}})));
  WatchClient watcher(stub_.get(), /*hold=*/false, /*deltas=*/true);
  // Nothing was published before (nobody watched): the publisher publishes
  // for this watcher, so its first message is the whole state of now.
  ASSERT_TRUE(Converges(watcher));
  EXPECT_FALSE(watcher.messages().front().delta());
  EXPECT_THAT(FlowIds(watcher.messages().front()), ElementsAre(1u, 2u, 3000u));
  // Node 1 raises flow 2 only; the next message with flows names flow 2
  // alone.
  const size_t seen = watcher.messages().size();
  ASSERT_TRUE(node1.Call(FlowReport(1, {{1, 100, 10}, {2, 201, 21}})));
  ASSERT_TRUE(watcher.WaitFor([seen](const Messages& m) {
    return m.size() > seen && m.back().state().flow_ids_size() > 0;
  }));
  const WatchFlowStateResponse change = watcher.messages().back();
  EXPECT_THAT(FlowIds(change), ElementsAre(2u));
  EXPECT_EQ(change.state().state_sizes(0), 201u);
  EXPECT_TRUE(change.state().found());
  EXPECT_TRUE(change.removed_flow_ids().empty());
  ASSERT_TRUE(Converges(watcher));
  // Node 1 stops reporting flow 1, the only holder: it is removed.
  ASSERT_TRUE(node1.Call(FlowReport(1, {{2, 201, 21}})));
  ASSERT_TRUE(watcher.WaitFor(
      [](const Messages& m) { return m.back().removed_flow_ids_size() > 0; }));
  EXPECT_THAT(watcher.messages().back().removed_flow_ids(), ElementsAre(1u));
  EXPECT_EQ(watcher.messages().back().state().flow_ids_size(), 0);
  ASSERT_TRUE(Converges(watcher));
}

TEST_F(WatchDeltaTest, ResetSendsTheWholeStateAgain) {
  HeartbeatClient node(channel_);
  ASSERT_TRUE(node.Call(FlowReport(1, {{1, 100, 10}})));
  WatchClient watcher(stub_.get(), false, true);
  ASSERT_TRUE(Converges(watcher));
  auto admin = metasrv::v1::Admin::NewStub(channel_);
  grpc::ClientContext ctx;
  metasrv::v1::LeaderChangeResponse resp;
  ASSERT_TRUE(admin->LeaderChange(&ctx, {}, &resp).ok());
  ASSERT_TRUE(
      watcher.WaitFor([](const Messages& m) { return m.back().reset(); }));
  const WatchFlowStateResponse reset = watcher.messages().back();
  EXPECT_FALSE(reset.delta());
  EXPECT_FALSE(reset.state().found());
  HeartbeatClient again(channel_);
  ASSERT_TRUE(again.Call(FlowReport(1, {{7, 70, 7}})));
  ASSERT_TRUE(Converges(watcher));
  EXPECT_TRUE(watcher.messages().back().delta());
}

// Whole-state watchers (old clients) beside delta watchers: both see every
// change, and the whole-state messages never carry delta fields.
TEST_F(WatchDeltaTest, OldClientsStillGetTheWholeState) {
  HeartbeatClient node(channel_);
  ASSERT_TRUE(node.Call(FlowReport(1, {{1, 1, 1}, {2, 2, 2}})));
  WatchClient old_client(stub_.get());
  WatchClient delta_client(stub_.get(), false, true);
  for (int i = 3; i < 20; ++i) {
    ASSERT_TRUE(node.Call(
        FlowReport(1, {{1, 1, 1}, {2, static_cast<uint64_t>(i), i}})));
    ASSERT_TRUE(Converges(old_client)) << i;
    ASSERT_TRUE(Converges(delta_client)) << i;
  }
  for (const WatchFlowStateResponse& m : old_client.messages()) {
    EXPECT_FALSE(m.delta());
    EXPECT_EQ(m.base_sequence(), 0u);
    EXPECT_EQ(m.state().flow_ids_size(), 2);
  }
  int deltas = 0;
  for (const WatchFlowStateResponse& m : delta_client.messages())
    deltas += m.delta();
  EXPECT_GE(deltas, 10);
}

// A delta watcher that stopped reading skipped states; when it reads again
// it gets the whole state (a delta would be against a state it never got),
// then deltas again.
TEST_F(WatchDeltaTest, AWatcherThatFellBehindGetsTheWholeState) {
  std::vector<std::tuple<uint32_t, uint64_t, int64_t>> flows;
  for (uint32_t f = 0; f < 20000; ++f) flows.push_back({f, 1000000 + f, 1});
  HeartbeatClient node(channel_);
  ASSERT_TRUE(node.Call(FlowReport(1, flows)));
  grpc::ChannelArguments args;  // A fixed 64 KiB window (see watch_test.cc).
  args.SetInt(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  args.SetInt(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 64 * 1024);
  auto slow_stub = metasrv::v1::FlowState::NewStub(
      ConnectOwn(server_->advertised_addr(), args));
  WatchClient slow(slow_stub.get(), /*hold=*/true, /*deltas=*/true);
  WatchClient fast(stub_.get(), false, true);
  ASSERT_TRUE(slow.WaitFor([](const Messages& m) { return !m.empty(); }));
  // Every flow changes each time: each delta is larger than the window, so
  // a write to the slow watcher stays in flight and it skips states.
  for (int i = 1; i <= 30; ++i) {
    for (auto& flow : flows) std::get<1>(flow) = 2000000 + i;
    ASSERT_TRUE(node.Call(FlowReport(1, flows)));
    ASSERT_TRUE(Converges(fast)) << i;
  }
  slow.Release();
  ASSERT_TRUE(Converges(slow));
  const Messages got = slow.messages();
  // The first state (whole), perhaps a write that was in flight, then a
  // whole state again: never a delta against a skipped state.
  ASSERT_GE(got.size(), 2u);
  EXPECT_LE(got.size(), 4u);
  EXPECT_FALSE(got.back().delta() &&
               got.back().base_sequence() != got[got.size() - 2].sequence());
  bool whole_after_first = false;
  for (size_t i = 1; i < got.size(); ++i) whole_after_first |= !got[i].delta();
  EXPECT_TRUE(whole_after_first);
  // And deltas from there on.
  std::get<1>(flows[0]) = 7;
  ASSERT_TRUE(node.Call(FlowReport(1, flows)));
  ASSERT_TRUE(Converges(slow));
  EXPECT_TRUE(slow.messages().back().delta());
  EXPECT_EQ(slow.messages().back().state().flow_ids_size(), 1);
}

// metasrv_watch_published_total, scraped.
double Published(int metrics_port) {
  const HttpResult got = HttpGet(metrics_port, "/metrics");
  const std::string key = "\nmetasrv_watch_published_total ";
  const size_t at = got.body.find(key);
  if (at == std::string::npos) return -1;
  return std::stod(got.body.substr(at + key.size()));
}

class WatchIdleTest : public WatchDeltaTest {
 protected:
  server::ServerOptions Options() override {
    server::ServerOptions options = WatchDeltaTest::Options();
    options.metrics_addr = "127.0.0.1:0";
    return options;
  }
};

// Nobody watching: reports build no states, and the last state built is
// let go. A watcher that comes later gets the whole state of its time.
TEST_F(WatchIdleTest, NothingIsBuiltWhileNobodyWatches) {
  const int port = server_->metrics_port();
  HeartbeatClient node(channel_);
  ASSERT_TRUE(node.Call(FlowReport(1, {{1, 10, 1}})));
  {
    WatchClient first(stub_.get(), false, true);
    ASSERT_TRUE(Converges(first));
  }
  ASSERT_TRUE(
      WaitFor([&] { return server_->watch().watchers() == 0u; }));
  const double published = Published(port);
  ASSERT_GE(published, 0);
  for (int i = 2; i <= 20; ++i) {
    ASSERT_TRUE(
        node.Call(FlowReport(1, {{1, static_cast<uint64_t>(10 + i), i}})));
  }
  // Asserting that nothing happens needs a span of time: 100 ms is twenty
  // publish intervals (5 ms here), in which a watcher would have had states.
  absl::SleepFor(absl::Milliseconds(100));
  EXPECT_EQ(Published(port), published);
  WatchClient later(stub_.get(), false, true);
  ASSERT_TRUE(Converges(later));
  const Messages got = later.messages();
  EXPECT_FALSE(got.front().delta());
  // The publisher counts a state once it has offered it, which may be just
  // after the watcher read it.
  EXPECT_TRUE(WaitFor([&] { return Published(port) > published; }));
}

}  // namespace
}  // namespace metasrv::testing
