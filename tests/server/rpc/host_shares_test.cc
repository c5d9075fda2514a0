#include "server/rpc/host_shares.h"

#include "gtest/gtest.h"

namespace metasrv::server {
namespace {

TEST(HostBudgetTest, BelowTheBoundAnyoneTakes) {
  HostBudget budget(100);
  EXPECT_TRUE(budget.Take("a", 60));
  EXPECT_TRUE(budget.Take("b", 40));
  EXPECT_EQ(budget.held(), 100);
  EXPECT_EQ(budget.Owed("a"), 0);
  budget.Give("a", 60);
  budget.Give("b", 40);
  EXPECT_EQ(budget.held(), 0);
}

// One host holds the whole bound: it may take no more, a newcomer under
// its share (100 / 2) still takes, and the holder owes as much back until
// it gives bytes back.
TEST(HostBudgetTest, AtTheBoundANewcomerTakesAndTheHostHoldingTheMostOwes) {
  HostBudget budget(100);
  ASSERT_TRUE(budget.Take("attacker", 100));
  EXPECT_FALSE(budget.Take("attacker", 1));
  EXPECT_TRUE(budget.Take("honest", 30));
  EXPECT_EQ(budget.Owed("attacker"), 30);  // What passes the bound.
  EXPECT_EQ(budget.Owed("honest"), 0);
  EXPECT_TRUE(budget.Take("honest", 20));  // 50: its share.
  EXPECT_EQ(budget.Owed("attacker"), 50);  // At most down to its share.
  EXPECT_FALSE(budget.Take("honest", 1));  // Past its share.
  budget.Give("attacker", 40);
  EXPECT_EQ(budget.Owed("attacker"), 10);
  budget.Give("attacker", 10);
  EXPECT_EQ(budget.Owed("attacker"), 0);
  EXPECT_EQ(budget.held(), 100);
}

// A host at or under its share owes nothing: only one over it gives back.
TEST(HostBudgetTest, AHostWithinItsShareOwesNothing) {
  HostBudget budget(90);
  ASSERT_TRUE(budget.Take("a", 30));
  ASSERT_TRUE(budget.Take("b", 30));
  ASSERT_TRUE(budget.Take("c", 30));
  EXPECT_FALSE(budget.Take("c", 1));  // Share 30 each.
  EXPECT_TRUE(budget.Take("d", 10));  // Share 22: under it.
  // What passes the bound, owed by hosts over the new share, the most
  // first, none below it.
  EXPECT_EQ(budget.Owed("a") + budget.Owed("b") + budget.Owed("c"), 10);
  EXPECT_LE(budget.Owed("a"), 8);
  EXPECT_EQ(budget.Owed("d"), 0);
}

// Once a second's bound is spent, only a host that inflated less than its
// share may inflate; the next second starts afresh.
TEST(HostInflationTest, PastTheBoundOnlyAHostUnderItsShareInflates) {
  HostInflation inflation(/*per_second=*/100);
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  EXPECT_TRUE(inflation.May("bomber", t0));
  inflation.Charge("bomber", 100, t0);
  EXPECT_FALSE(inflation.May("bomber", t0));
  EXPECT_TRUE(inflation.May("flownode", t0));  // Holds 0 of its 50.
  inflation.Charge("flownode", 10, t0);
  EXPECT_TRUE(inflation.May("flownode", t0 + absl::Milliseconds(900)));
  inflation.Charge("flownode", 45, t0);
  EXPECT_FALSE(inflation.May("flownode", t0));  // 55 of its 50.
  EXPECT_TRUE(inflation.May("bomber", t0 + absl::Seconds(1)));
}

TEST(HostResetsTest, AHostPastItsBudgetIsSlowedAndOthersAreNot) {
  HostResets resets(/*burst=*/3, /*rate=*/1);
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(resets.Take("a", t0));
  EXPECT_FALSE(resets.Take("a", t0));
  EXPECT_FALSE(resets.Allowed("a", t0 + absl::Milliseconds(500)));
  EXPECT_TRUE(resets.Allowed("b", t0));
  EXPECT_TRUE(resets.Take("b", t0));
  // Slowed for a second; refilled at the rate.
  EXPECT_TRUE(resets.Allowed("a", t0 + absl::Seconds(1)));
  EXPECT_TRUE(resets.Take("a", t0 + absl::Seconds(1)));
  EXPECT_FALSE(resets.Take("a", t0 + absl::Seconds(1)));
}

}  // namespace
}  // namespace metasrv::server
