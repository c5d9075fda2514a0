// End to end over gRPC: WatchFlowState.
#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "core/clock.h"
#include "gtest/gtest.h"
#include "metasrv/v1/metasrv.grpc.pb.h"
#include "tests/server/in_process_server.h"
#include "tests/server/test_util.h"
#include "tests/server/watch_client.h"

namespace metasrv::testing {
namespace {

using metasrv::v1::WatchFlowStateResponse;
using Watcher = WatchClient;

// The state_size of `flow` in `msg`, or -1.
int64_t SizeOf(const WatchFlowStateResponse& msg, uint32_t flow) {
  for (int i = 0; i < msg.state().flow_ids_size(); ++i) {
    if (msg.state().flow_ids(i) == flow) {
      return static_cast<int64_t>(msg.state().state_sizes(i));
    }
  }
  return -1;
}

// Whether the last message has `flow` at `size`.
auto LastHas(uint32_t flow, int64_t size) {
  return [flow, size](const std::vector<WatchFlowStateResponse>& m) {
    return !m.empty() && SizeOf(m.back(), flow) == size;
  };
}

class WatchTest : public InProcessServerTest {
 protected:
  server::ServerOptions Options() override {
    server::ServerOptions options = InProcessServerTest::Options();
    options.watch.min_interval = interval_;
    return options;
  }
  void SetUp() override {
    InProcessServerTest::SetUp();
    stub_ = metasrv::v1::FlowState::NewStub(channel_);
  }
  void LeaderChange() {
    auto admin = metasrv::v1::Admin::NewStub(channel_);
    grpc::ClientContext ctx;
    metasrv::v1::LeaderChangeResponse resp;
    ASSERT_TRUE(admin->LeaderChange(&ctx, {}, &resp).ok());
  }

  // `count` watchers of the whole state over `channels` connections of
  // their own, spread evenly.
  std::vector<std::unique_ptr<Watcher>> ManyWatchers(int count, int channels) {
    for (int c = 0; c < channels; ++c) {
      own_stubs_.push_back(metasrv::v1::FlowState::NewStub(
          ConnectOwn(server_->advertised_addr())));
    }
    const size_t first = own_stubs_.size() - channels;
    std::vector<std::unique_ptr<Watcher>> watchers;
    for (int i = 0; i < count; ++i) {
      watchers.push_back(
          std::make_unique<Watcher>(own_stubs_[first + i % channels].get()));
    }
    return watchers;
  }

  // Whether every watcher's messages come to satisfy `pred` (30 s each).
  template <typename Pred>
  static bool AllSee(const std::vector<std::unique_ptr<Watcher>>& watchers,
                     Pred pred) {
    for (const auto& w : watchers) {
      if (!w->WaitFor(pred, absl::Seconds(30))) return false;
    }
    return true;
  }

  absl::Duration interval_ = absl::Milliseconds(200);  // --watch_min_interval.
  std::unique_ptr<metasrv::v1::FlowState::Stub> stub_;
  // Stubs of ManyWatchers' connections; outlive their watchers.
  std::vector<std::unique_ptr<metasrv::v1::FlowState::Stub>> own_stubs_;
};

TEST_F(WatchTest, CurrentStateAtOnceThenAPushPerChange) {
  HeartbeatClient node(channel_);
  ASSERT_TRUE(node.Call(FlowReport(1, {{1, 100, 10}})));
  Watcher watcher(stub_.get());
  ASSERT_TRUE(watcher.WaitFor(LastHas(1, 100)));
  const WatchFlowStateResponse first = watcher.messages().front();
  EXPECT_TRUE(first.state().found());
  EXPECT_FALSE(first.reset());
  ASSERT_TRUE(node.Call(FlowReport(1, {{1, 101, 11}, {2, 5, 5}})));
  ASSERT_TRUE(watcher.WaitFor(LastHas(2, 5)));
  const std::vector<WatchFlowStateResponse> all = watcher.messages();
  EXPECT_EQ(SizeOf(all.back(), 1), 101);
  EXPECT_GT(all.back().sequence(), first.sequence());
  for (size_t i = 1; i < all.size(); ++i) {
    EXPECT_GT(all[i].sequence(), all[i - 1].sequence());
  }
}

TEST_F(WatchTest, ChangesAreCoalescedToOnePushPerInterval) {
  HeartbeatClient node(channel_);
  ASSERT_TRUE(node.Call(FlowReport(1, {{1, 0, 0}})));
  Watcher watcher(stub_.get());
  ASSERT_TRUE(watcher.WaitFor(LastHas(1, 0)));
  // 100 changes over about a second.
  const absl::Time start = absl::Now();
  for (int i = 1; i <= 100; ++i) {
    ASSERT_TRUE(node.Call(FlowReport(1, {{1, static_cast<uint64_t>(i), i}})));
    absl::SleepFor(absl::Milliseconds(10));
  }
  const absl::Duration took = absl::Now() - start;
  ASSERT_TRUE(watcher.WaitFor(LastHas(1, 100)));
  const std::vector<WatchFlowStateResponse> all = watcher.messages();
  // Pushes (after the first message) are at least an interval apart, as the
  // server stamped them (ms are truncated, hence the 1 ms).
  const int64_t interval_ms = absl::ToInt64Milliseconds(interval_);
  for (size_t i = 2; i < all.size(); ++i) {
    EXPECT_GE(all[i].sent_at_ms() - all[i - 1].sent_at_ms(), interval_ms - 1)
        << "push " << i;
  }
  // So there are at most took/interval + 2 of them, far fewer than changes.
  EXPECT_LE(static_cast<int64_t>(all.size()) - 1,
            absl::ToInt64Milliseconds(took) / interval_ms + 2);
  EXPECT_GE(all.size(), 2u);
}

// The interval is timed on the server's clock: a manual one that stands
// still holds every push back, however long in real time; moved on, the
// push goes out stamped with it.
class ManualClockWatchTest : public WatchTest {
 protected:
  server::ServerOptions Options() override {
    interval_ = absl::Hours(1);
    server::ServerOptions options = WatchTest::Options();
    options.clock = &clock_;
    return options;
  }
  core::ManualClock clock_;  // The server's time.
};

TEST_F(ManualClockWatchTest, PushesWaitForTheServersClock) {
  HeartbeatClient node(channel_);
  ASSERT_TRUE(node.Call(FlowReport(1, {{1, 100, 10}})));
  Watcher watcher(stub_.get());
  ASSERT_TRUE(watcher.WaitFor(LastHas(1, 100)));  // The first: at once.
  ASSERT_TRUE(node.Call(FlowReport(1, {{1, 101, 11}})));
  clock_.Advance(absl::Minutes(59));
  EXPECT_FALSE(watcher.WaitFor(LastHas(1, 101), absl::Milliseconds(300)));
  clock_.Advance(absl::Minutes(1));
  ASSERT_TRUE(watcher.WaitFor(LastHas(1, 101)));
  const std::vector<WatchFlowStateResponse> all = watcher.messages();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[1].sent_at_ms() - all[0].sent_at_ms(), 3600 * 1000);
}

TEST_F(WatchTest, ResetPushesAnEmptyStateMarkedAsReset) {
  HeartbeatClient node(channel_);
  ASSERT_TRUE(node.Call(FlowReport(1, {{1, 100, 10}})));
  Watcher watcher(stub_.get());
  ASSERT_TRUE(watcher.WaitFor(LastHas(1, 100)));
  LeaderChange();
  ASSERT_TRUE(watcher.WaitFor([](const std::vector<WatchFlowStateResponse>& m) {
    return m.back().reset();
  }));
  const WatchFlowStateResponse reset = watcher.messages().back();
  EXPECT_FALSE(reset.state().found());
  EXPECT_EQ(reset.state().flow_ids_size(), 0);
  // Reports after the reset come as ordinary pushes.
  ASSERT_TRUE(node.Call(FlowReport(1, {{3, 30, 3}})));
  ASSERT_TRUE(watcher.WaitFor(LastHas(3, 30)));
  EXPECT_FALSE(watcher.messages().back().reset());
  EXPECT_EQ(SizeOf(watcher.messages().back(), 1), -1);
}

TEST_F(WatchTest, AWatcherThatVanishesIsReleased) {
  {
    Watcher watcher(stub_.get());
    ASSERT_TRUE(
        watcher.WaitFor([](const std::vector<WatchFlowStateResponse>& m) {
          return !m.empty();
        }));
    EXPECT_EQ(server_->watch().watchers(), 1u);
  }  // Cancelled here.
  EXPECT_TRUE(
      WaitFor([&] { return server_->watch().watchers() == 0u; }));
  // Changes still flow to nobody, and reads keep working.
  HeartbeatClient node(channel_);
  ASSERT_TRUE(node.Call(FlowReport(1, {{1, 1, 1}})));
  EXPECT_EQ(GetFlowState(channel_).flows.size(), 1u);
}

TEST_F(WatchTest, ShutdownEndsWatchersWithUnavailable) {
  Watcher watcher(stub_.get());
  ASSERT_TRUE(watcher.WaitFor(
      [](const std::vector<WatchFlowStateResponse>& m) { return !m.empty(); }));
  server_->Shutdown();
  ASSERT_TRUE(watcher.WaitDone());
  EXPECT_EQ(watcher.status()->error_code(), grpc::StatusCode::UNAVAILABLE);
}

class FastWatchTest : public WatchTest {
 protected:
  FastWatchTest() { interval_ = absl::Milliseconds(5); }
  // The slow reader below holds its window shut for the whole test, which
  // under ASan on a loaded machine outlasts the 5 s default stall limit
  // (that limit ending such a reader is PushCallDoorTest's subject).
  server::ServerOptions Options() override {
    server::ServerOptions options = WatchTest::Options();
    options.door.reply_stall_limit = absl::Minutes(2);
    return options;
  }
};

// A reader that stops reading holds up neither heartbeats nor other watchers,
// and gets the latest state, not a backlog, once it reads again.
TEST_F(FastWatchTest, SlowWatcherSkipsToTheLatestState) {
  // 20,000 flows: one state is far larger than HTTP/2's flow-control window,
  // so a write to a reader that stops reading stays in flight.
  std::vector<std::tuple<uint32_t, uint64_t, int64_t>> flows;
  for (uint32_t f = 0; f < 20000; ++f)
    flows.push_back({f, 1000000 + f, 1700000000000});
  HeartbeatClient node(channel_);
  ASSERT_TRUE(node.Call(FlowReport(1, flows)));
  // The slow reader's own connection, with a fixed 64 KiB window: otherwise
  // gRPC grows the window and the client library buffers megabytes of
  // states the application never asked for, which hides what the server does.
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  args.SetInt(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 64 * 1024);
  auto slow_stub = metasrv::v1::FlowState::NewStub(
      ConnectOwn(server_->advertised_addr(), args));
  Watcher slow(slow_stub.get(), /*hold=*/true);
  Watcher fast(stub_.get());
  ASSERT_TRUE(slow.WaitFor(LastHas(0, 1000000)));
  constexpr int kChanges = 60;
  absl::Duration slowest;
  for (int i = 1; i <= kChanges; ++i) {
    std::get<1>(flows[0]) = 1000000 + i;
    const absl::Time start = absl::Now();
    ASSERT_TRUE(node.Call(FlowReport(1, flows)));
    slowest = std::max(slowest, absl::Now() - start);
    // Let the fast watcher see this change, so there are many pushes.
    ASSERT_TRUE(fast.WaitFor(LastHas(0, 1000000 + i))) << i;
  }
  EXPECT_LT(slowest, absl::Seconds(2));
  EXPECT_EQ(slow.messages().size(), 1u);
  EXPECT_GE(fast.messages().size(), static_cast<size_t>(kChanges));
  slow.Release();
  ASSERT_TRUE(slow.WaitFor(LastHas(0, 1000000 + kChanges)));
  const std::vector<WatchFlowStateResponse> got = slow.messages();
  // The initial state, at most the one write that was in flight while it did
  // not read, then the latest: never the backlog of 60.
  EXPECT_LE(got.size(), 3u);
  EXPECT_EQ(got.back().sequence(), fast.messages().back().sequence());
}

TEST_F(WatchTest, ThousandWatchersEachGetEveryState) {
  constexpr int kChannels = 4, kWatchers = 1000;
  HeartbeatClient node(channel_);
  ASSERT_TRUE(node.Call(FlowReport(1, {{1, 1, 1}})));
  std::vector<std::unique_ptr<Watcher>> watchers =
      ManyWatchers(kWatchers, kChannels);
  auto all_see = [&](auto pred) { return AllSee(watchers, pred); };
  EXPECT_TRUE(all_see(LastHas(1, 1)));
  EXPECT_EQ(server_->watch().watchers(),
            static_cast<uint64_t>(kWatchers));
  ASSERT_TRUE(node.Call(FlowReport(1, {{1, 2, 2}})));
  EXPECT_TRUE(all_see(LastHas(1, 2)));
  LeaderChange();
  EXPECT_TRUE(all_see([](const std::vector<WatchFlowStateResponse>& m) {
    return m.back().reset() && m.back().state().flow_ids_size() == 0;
  }));
  watchers.clear();
  EXPECT_TRUE(
      WaitFor([&] { return server_->watch().watchers() == 0u; }));
}

// Watchers are offered states in waves (256 watchers: 8 of them, spread over
// half the interval); watchers that leave while a state is being offered
// leave the others served, and leave no trace in the hub.
TEST_F(WatchTest, WatchersLeavingWhileWavesRunLeaveTheRestServed) {
  constexpr int kChannels = 2, kWatchers = 256;
  HeartbeatClient node(channel_);
  ASSERT_TRUE(node.Call(FlowReport(1, {{1, 1, 1}})));
  std::vector<std::unique_ptr<Watcher>> watchers =
      ManyWatchers(kWatchers, kChannels);
  auto all_see = [&](auto pred) { return AllSee(watchers, pred); };
  ASSERT_TRUE(all_see(LastHas(1, 1)));
  for (int64_t size = 2; size <= 4; ++size) {
    ASSERT_TRUE(node.Call(FlowReport(1, {{1, size, size}})));
    // A third of the watchers leave while this state goes out.
    std::vector<std::unique_ptr<Watcher>> staying;
    for (size_t i = 0; i < watchers.size(); ++i) {
      if (i % 3 != 0) staying.push_back(std::move(watchers[i]));
    }
    watchers = std::move(staying);
    EXPECT_TRUE(all_see(LastHas(1, size))) << "size " << size;
    EXPECT_TRUE(WaitFor([&] {
      return server_->watch().watchers() == watchers.size();
    }));
  }
}

}  // namespace
}  // namespace metasrv::testing
