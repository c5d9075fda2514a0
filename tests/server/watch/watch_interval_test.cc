// WatchFlowState with a watcher's own interval (min_interval_ms): fewer
// messages, each delta holding every flow changed over the interval once.
#include <atomic>
#include <cstdint>
#include <limits>
#include <memory>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/time/time.h"
#include "core/clock.h"
#include "core/flow_state_manager.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "metasrv/v1/metasrv.grpc.pb.h"
#include "server/watch/flow_state_watch.h"
#include "tests/server/in_process_server.h"
#include "tests/server/test_util.h"
#include "tests/server/watch_client.h"

namespace metasrv::testing {
namespace {

using metasrv::v1::WatchFlowStateResponse;
using ::testing::ElementsAre;
using Messages = std::vector<WatchFlowStateResponse>;

TEST(WatchTierTest, AnIntervalIsRoundedUpToTheServersTimesAPowerOfTwo) {
  core::FlowStateManager manager;
  server::WatchHub::Options options;
  options.min_interval = absl::Milliseconds(500);
  core::StandaloneLeadership leadership("127.0.0.1:3002");
  server::CallDoor door(&leadership, server::AdminAuth(),
                        server::OpenDoorOptions(), core::SystemClock(),
                        nullptr);
  server::WatchHub hub(&manager, options, /*metrics=*/nullptr, &door);
  EXPECT_EQ(hub.TierFor(absl::ZeroDuration()), 0);
  EXPECT_EQ(hub.TierFor(absl::Milliseconds(100)), 0);
  EXPECT_EQ(hub.TierFor(absl::Milliseconds(500)), 0);
  EXPECT_EQ(hub.TierFor(absl::Milliseconds(501)), 1);
  EXPECT_EQ(hub.TierFor(absl::Seconds(1)), 1);
  EXPECT_EQ(hub.TierFor(absl::Seconds(10)), 5);  // 16 s: 8 s is too short.
  EXPECT_EQ(hub.TierFor(absl::Seconds(64)), 7);
  // Longer than 128 times: 128 times, whatever is asked; so watchers never
  // make more than kTiers tiers of work.
  EXPECT_EQ(hub.TierFor(absl::Seconds(65)), server::WatchHub::kTiers - 1);
  EXPECT_EQ(
      hub.TierFor(absl::Milliseconds(std::numeric_limits<uint32_t>::max())),
      server::WatchHub::kTiers - 1);
}

// The server's interval is a minute on a manual clock that only the test
// moves, so what each watcher is sent, and when, is exact.
class WatchIntervalTest : public InProcessServerTest {
 protected:
  server::ServerOptions Options() override {
    server::ServerOptions options = InProcessServerTest::Options();
    options.watch.min_interval = absl::Minutes(1);
    options.clock = &clock_;
    return options;
  }
  void SetUp() override {
    InProcessServerTest::SetUp();
    stub_ = metasrv::v1::FlowState::NewStub(channel_);
  }
  // Moves the server's clock on by `minutes`, one at a time, letting the
  // publisher see each minute (it wakes every 50 ms of real time at most).
  void Advance(int minutes) {
    for (int i = 0; i < minutes; ++i) clock_.Advance(absl::Minutes(1));
  }
  // Whether the publisher has weighed the server's clock as it is now and
  // published nothing more to the tier of a watcher that asked for one
  // message per `asked`: checked on the clock, not by waiting real time
  // for a message that should not come.
  bool NothingDueFor(absl::Duration asked) {
    server::WatchHub& hub = server_->watch();
    const int tier = hub.TierFor(asked);
    const uint64_t before = hub.PublishedTo(tier);
    if (!WaitFor([&] { return hub.LookedAt() >= clock_.Monotonic(); })) {
      return false;
    }
    return hub.PublishedTo(tier) == before;
  }

  core::ManualClock clock_;  // The server's time.
  std::unique_ptr<metasrv::v1::FlowState::Stub> stub_;
};

auto Count(size_t n) {
  return [n](const Messages& m) { return m.size() >= n; };
}

TEST_F(WatchIntervalTest, ALongerIntervalGetsOneDeltaOfAllItsChanges) {
  HeartbeatClient node(channel_);
  ASSERT_TRUE(node.Call(FlowReport(1, {{1, 100, 10}, {2, 200, 20}})));
  WatchClient often(stub_.get(), /*hold=*/false, /*deltas=*/true);
  // Three minutes asked: served every four (the server's minute times 4).
  WatchClient seldom(stub_.get(), /*hold=*/false, /*deltas=*/true,
                     /*min_interval_ms=*/3 * 60 * 1000);
  ASSERT_TRUE(often.WaitFor(Count(1)));
  ASSERT_TRUE(seldom.WaitFor(Count(1)));
  EXPECT_THAT(FlowIds(seldom.messages()[0]), ElementsAre(1u, 2u));

  ASSERT_TRUE(node.Call(FlowReport(1, {{1, 101, 11}, {2, 200, 20}})));
  Advance(1);
  ASSERT_TRUE(often.WaitFor(Count(2)));
  EXPECT_THAT(FlowIds(often.messages()[1]), ElementsAre(1u));
  ASSERT_TRUE(node.Call(FlowReport(1, {{1, 102, 12}, {2, 201, 21}})));
  Advance(1);
  ASSERT_TRUE(often.WaitFor(Count(3)));
  EXPECT_THAT(FlowIds(often.messages()[2]), ElementsAre(1u, 2u));
  Advance(1);
  // Three minutes on, the seldom watcher has had nothing more: the
  // publisher has seen minute three and published nothing to its tier.
  EXPECT_TRUE(NothingDueFor(absl::Minutes(3)));
  EXPECT_EQ(seldom.messages().size(), 1u);
  Advance(1);
  ASSERT_TRUE(seldom.WaitFor(Count(2)));
  const Messages got = seldom.messages();
  ASSERT_EQ(got.size(), 2u);
  // One delta for the four minutes, each flow once, at its latest.
  EXPECT_TRUE(got[1].delta());
  EXPECT_EQ(got[1].base_sequence(), got[0].sequence());
  EXPECT_THAT(FlowIds(got[1]), ElementsAre(1u, 2u));
  EXPECT_THAT(got[1].state().state_sizes(), ElementsAre(102u, 201u));
  EXPECT_EQ(got[1].sent_at_ms() - got[0].sent_at_ms(), 4 * 60 * 1000);
  // The other watcher was not held back by it: a message per minute.
  EXPECT_EQ(often.messages().size(), 3u);
}

TEST_F(WatchIntervalTest, AnyLongerAskIsServedAtTheLongestTier) {
  HeartbeatClient node(channel_);
  ASSERT_TRUE(node.Call(FlowReport(1, {{1, 100, 10}})));
  WatchClient watcher(stub_.get(), /*hold=*/false, /*deltas=*/false,
                      /*min_interval_ms=*/std::numeric_limits<uint32_t>::max());
  ASSERT_TRUE(watcher.WaitFor(Count(1)));
  ASSERT_TRUE(node.Call(FlowReport(1, {{1, 101, 11}})));
  Advance(127);
  EXPECT_TRUE(
      NothingDueFor(absl::Milliseconds(std::numeric_limits<uint32_t>::max())));
  EXPECT_EQ(watcher.messages().size(), 1u);
  Advance(1);
  ASSERT_TRUE(watcher.WaitFor(Count(2)));
  const Messages got = watcher.messages();
  EXPECT_EQ(got[1].sent_at_ms() - got[0].sent_at_ms(), 128 * 60 * 1000);
  EXPECT_EQ(got[1].state().state_sizes(0), 101u);
}

// A tier its last watcher left holds no state: a watcher that comes to it
// later gets the whole state of its own time at once, not an old one.
TEST_F(WatchIntervalTest, ATierNobodyWatchesStartsAfresh) {
  HeartbeatClient node(channel_);
  ASSERT_TRUE(node.Call(FlowReport(1, {{1, 100, 10}})));
  {
    WatchClient first(stub_.get(), false, true, 2 * 60 * 1000);
    ASSERT_TRUE(first.WaitFor(Count(1)));
  }
  ASSERT_TRUE(
      WaitFor([&] { return server_->watch().TiersHeld() == 0; }));
  ASSERT_TRUE(node.Call(FlowReport(1, {{1, 105, 15}})));
  WatchClient later(stub_.get(), false, true, 2 * 60 * 1000);
  ASSERT_TRUE(later.WaitFor(Count(1)));
  const WatchFlowStateResponse first_message = later.messages()[0];
  EXPECT_FALSE(first_message.delta());
  ASSERT_EQ(first_message.state().state_sizes_size(), 1);
  EXPECT_EQ(first_message.state().state_sizes(0), 105u);
}

// Watchers of five intervals (the server's 5 ms, and 10, 20, 40 and 80 ms
// asked) come and go on four threads while a flownode changes flows: every
// watcher that stays converges to GetFlowState through its deltas, and once
// all have left no tier holds anything.
class WatchTiersRaceTest : public InProcessServerTest {
 protected:
  server::ServerOptions Options() override {
    server::ServerOptions options = InProcessServerTest::Options();
    options.watch.min_interval = absl::Milliseconds(5);
    return options;
  }
};

TEST_F(WatchTiersRaceTest, WatchersOfEveryTierComingAndGoingConverge) {
  auto stub = metasrv::v1::FlowState::NewStub(channel_);
  constexpr uint32_t kIntervalsMs[] = {0, 10, 20, 40, 80};
  std::vector<std::unique_ptr<WatchClient>> staying;
  for (int i = 0; i < 40; ++i) {
    staying.push_back(std::make_unique<WatchClient>(
        stub.get(), false, /*deltas=*/true, kIntervalsMs[i % 5]));
  }
  std::atomic<bool> done{false};
  std::vector<std::thread> churn;
  for (int t = 0; t < 4; ++t) {
    churn.emplace_back([&, t] {
      for (int i = 0; !done.load(); ++i) {
        WatchClient passing(stub.get(), false, (i + t) % 2 == 0,
                            kIntervalsMs[(i + t) % 5]);
        passing.WaitFor(Count(1), absl::Milliseconds(20));
      }
    });
  }
  HeartbeatClient node(channel_);
  std::vector<std::tuple<uint32_t, uint64_t, int64_t>> flows;
  for (uint32_t f = 0; f < 50; ++f) flows.push_back({f, 100, 1});
  for (int round = 1; round <= 100; ++round) {
    // A few flows change each round, and one comes and goes.
    for (uint32_t f = round % 7; f < flows.size(); f += 7) {
      std::get<1>(flows[f]) = 100 + round;
    }
    auto report = flows;
    if (round % 2 == 0) report.pop_back();
    ASSERT_TRUE(node.Call(FlowReport(1, report)));
    if (round % 10 == 0) absl::SleepFor(absl::Milliseconds(5));
  }
  done = true;
  for (std::thread& t : churn) t.join();
  const std::map<uint32_t, std::string> want = ReadFlows(channel_);
  ASSERT_EQ(want.size(), flows.size() - 1);  // The last round left one out.
  for (size_t i = 0; i < staying.size(); ++i) {
    EXPECT_TRUE(staying[i]->WaitFor([&](const Messages& m) {
      return !m.empty() && WatchedFlows(m) == want;
    })) << "watcher "
        << i << " of interval " << kIntervalsMs[i % 5];
  }
  staying.clear();
  EXPECT_TRUE(
      WaitFor([&] { return server_->watch().TiersHeld() == 0; }));
}

// 128 watchers of a 40 ms tier are offered each state in four waves, paced
// by the publisher between its other work: every one of them gets every
// state, and so does a watcher of the server's 5 ms meanwhile.
TEST_F(WatchTiersRaceTest, EveryWaveOfALongerTierGoesOut) {
  auto stub = metasrv::v1::FlowState::NewStub(channel_);
  std::vector<std::unique_ptr<WatchClient>> watchers;
  for (int i = 0; i < 128; ++i) {
    watchers.push_back(
        std::make_unique<WatchClient>(stub.get(), false, true, 40));
  }
  WatchClient fast(stub.get(), false, true);
  HeartbeatClient node(channel_);
  for (uint64_t size = 1; size <= 5; ++size) {
    ASSERT_TRUE(node.Call(FlowReport(1, {{1, size, 1}, {2, 7, 1}})));
    const std::map<uint32_t, std::string> want = ReadFlows(channel_);
    auto converged = [&](const Messages& m) {
      return !m.empty() && WatchedFlows(m) == want;
    };
    ASSERT_TRUE(fast.WaitFor(converged)) << size;
    for (size_t i = 0; i < watchers.size(); ++i) {
      ASSERT_TRUE(watchers[i]->WaitFor(converged)) << size << " " << i;
    }
  }
}

}  // namespace
}  // namespace metasrv::testing
