// LeaderState on a manual clock: whom a replica names, when it stops naming
// a leader, and the transitions through its listener.
#include "server/election/leader_state.h"

#include <string>

#include "absl/status/status.h"
#include "gtest/gtest.h"

namespace metasrv::server {
namespace {

constexpr absl::Duration kTtl = absl::Seconds(6);

class RecordingListener final : public core::LeadershipListener {
 public:
  uint64_t OnBecomeLeader() override { return ++terms; }
  uint64_t OnStepDown() override {
    ++step_downs;
    return 5;
  }
  uint64_t terms = 0;
  int step_downs = 0;
};

class LeaderStateTest : public ::testing::Test {
 protected:
  core::ManualClock clock_;
  RecordingListener listener_;
  LeaderState state_{"10.0.0.1:3002", "test", &clock_, kTtl, &listener_};
};

TEST_F(LeaderStateTest, AFollowerNamesWhomTheStoreNames) {
  EXPECT_EQ(state_.Leader().addr, "");
  EXPECT_FALSE(state_.Leader().stale);
  state_.SetObserved("10.0.0.9:3002");
  EXPECT_EQ(state_.Leader().addr, "10.0.0.9:3002");
  // The store keeps answering: the leader stays named however long.
  for (int i = 0; i < 10; ++i) {
    clock_.Advance(kTtl / 3);
    state_.ReportHealth(absl::OkStatus());
    EXPECT_EQ(state_.Leader().addr, "10.0.0.9:3002") << i;
  }
}

TEST_F(LeaderStateTest, PastItsTimeTheObservedLeaderIsStale) {
  state_.SetObserved("10.0.0.9:3002", clock_.Monotonic() + absl::Seconds(2));
  clock_.Advance(absl::Seconds(2) - absl::Milliseconds(1));
  EXPECT_EQ(state_.Leader().addr, "10.0.0.9:3002");
  clock_.Advance(absl::Milliseconds(1));
  EXPECT_EQ(state_.Leader().addr, "");
  EXPECT_TRUE(state_.Leader().stale);
}

// Issue 38, item 2: out of touch with the store for longer than the TTL, a
// follower names no leader (the one it knew cannot have renewed either);
// the store's next answer names it again.
TEST_F(LeaderStateTest, OutOfTouchWithTheStorePastTheTtlNamesNone) {
  state_.SetObserved("10.0.0.9:3002");
  state_.ReportHealth(absl::UnavailableError("store down"));
  clock_.Advance(kTtl);
  EXPECT_EQ(state_.Leader().addr, "10.0.0.9:3002");  // Not yet past it.
  state_.ReportHealth(absl::UnavailableError("store down"));
  clock_.Advance(absl::Milliseconds(1));
  EXPECT_EQ(state_.Leader().addr, "");
  EXPECT_TRUE(state_.Leader().stale);
  EXPECT_TRUE(state_.FollowerAddrs().empty());
  EXPECT_FALSE(state_.healthy());
  state_.ReportHealth(absl::OkStatus());
  EXPECT_EQ(state_.Leader().addr, "10.0.0.9:3002");
  EXPECT_TRUE(state_.healthy());
}

TEST_F(LeaderStateTest, LeadingNamesItselfAndStepDownForgetsTheLeader) {
  state_.SetObserved("10.0.0.9:3002");
  state_.lease().Confirmed(clock_.Monotonic());
  EXPECT_TRUE(state_.BecomeLeader([] { return true; }));
  EXPECT_EQ(listener_.terms, 1u);
  EXPECT_EQ(state_.Leader().addr, "10.0.0.1:3002");
  EXPECT_TRUE(state_.CurrentTerm().leading);
  EXPECT_EQ(state_.CurrentTerm().state_term, 1u);
  // A leader names itself even out of touch; its lease bounds that.
  clock_.Advance(2 * kTtl);
  EXPECT_EQ(state_.Leader().addr, "10.0.0.1:3002");
  EXPECT_FALSE(state_.CurrentTerm().leading);  // The lease has passed.
  EXPECT_EQ(state_.StepDown("test"), 5u);
  EXPECT_EQ(listener_.step_downs, 1);
  EXPECT_EQ(state_.Leader().addr, "");
  EXPECT_EQ(state_.StepDown("again"), 0u);  // Not leading: nothing.
  EXPECT_EQ(listener_.step_downs, 1);
}

TEST_F(LeaderStateTest, MayLeadSaysNoOrAnExpiredLeaseRefuses) {
  state_.lease().Confirmed(clock_.Monotonic());
  EXPECT_FALSE(state_.BecomeLeader([] { return false; }));
  clock_.Advance(kTtl);
  EXPECT_FALSE(state_.BecomeLeader([] { return true; }));
  EXPECT_EQ(listener_.terms, 0u);
  EXPECT_FALSE(state_.leading());
}

}  // namespace
}  // namespace metasrv::server
