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
