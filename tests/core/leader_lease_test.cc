#include "core/leader_lease.h"

#include "gtest/gtest.h"

namespace metasrv::core {
namespace {

TEST(LeaderLeaseTest, InvalidUntilConfirmed) {
  ManualClock clock;
  LeaderLease lease(&clock, absl::Seconds(6));
  EXPECT_FALSE(lease.Valid());
  EXPECT_EQ(lease.keepalive_interval(), absl::Seconds(2));
}

TEST(LeaderLeaseTest, ValidForTwoThirdsOfTtlAfterTheConfirmedSend) {
  ManualClock clock;
  LeaderLease lease(&clock, absl::Seconds(6));
  const absl::Time sent = clock.Now();
  clock.Advance(absl::Milliseconds(300));  // The answer took 300 ms.
  lease.Confirmed(sent);
  EXPECT_TRUE(lease.Valid());
  EXPECT_EQ(lease.valid_until(), sent + absl::Seconds(4));
  clock.Advance(absl::Seconds(4) - absl::Milliseconds(301));
  EXPECT_TRUE(lease.Valid());
  clock.Advance(absl::Milliseconds(1));
  EXPECT_FALSE(lease.Valid());  // Still TTL/3 before etcd could expire it.
}

// Issue 67: past what the leader may act on, the lease still exists in the
// store until TTL after the send, less 5 % for the clocks' rates: failed
// keep-alives are tried until then.
TEST(LeaderLeaseTest, HeldUntilTheTtlLessItsRateMarginAndLostWithIt) {
  ManualClock clock;
  LeaderLease lease(&clock, absl::Seconds(6));
  EXPECT_EQ(lease.held_until(), absl::InfinitePast());
  const absl::Time sent = clock.Monotonic();
  lease.Confirmed(sent);
  EXPECT_EQ(lease.held_until(), sent + absl::Milliseconds(5700));
  EXPECT_LT(lease.valid_until(), lease.held_until());
  lease.Confirmed(sent - absl::Seconds(1));  // A late answer never shortens.
  EXPECT_EQ(lease.held_until(), sent + absl::Milliseconds(5700));
  lease.Lost();
  EXPECT_EQ(lease.held_until(), absl::InfinitePast());
}

TEST(LeaderLeaseTest, KeepAlivesExtendButNeverShorten) {
  ManualClock clock;
  LeaderLease lease(&clock, absl::Seconds(3));
  const absl::Time first = clock.Now();
  lease.Confirmed(first);
  clock.Advance(absl::Seconds(1));
  lease.Confirmed(clock.Now());
  EXPECT_EQ(lease.valid_until(), first + absl::Seconds(3));
  // A late answer to an older keep-alive does not move the end back.
  lease.Confirmed(first);
  EXPECT_EQ(lease.valid_until(), first + absl::Seconds(3));
}

TEST(LeaderLeaseTest, LostEndsItAtOnce) {
  ManualClock clock;
  LeaderLease lease(&clock, absl::Seconds(5));
  lease.Confirmed(clock.Now());
  lease.Lost();
  EXPECT_FALSE(lease.Valid());
}

TEST(LeaderLeaseTest, AWallClockStepDoesNotExtendIt) {
  SplitClock clock;
  LeaderLease lease(&clock, absl::Seconds(6));
  lease.Confirmed(clock.Monotonic());
  // Someone sets the date back an hour: the lease must still end 4 s after
  // the confirmed send, on the monotonic clock.
  clock.wall.Advance(-absl::Hours(1));
  clock.mono.Advance(absl::Seconds(4));
  EXPECT_FALSE(lease.Valid());
  // And a step forward does not end it early.
  lease.Confirmed(clock.Monotonic());
  clock.wall.Advance(absl::Hours(2));
  EXPECT_TRUE(lease.Valid());
}

}  // namespace
}  // namespace metasrv::core
