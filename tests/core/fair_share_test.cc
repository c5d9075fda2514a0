#include "core/fair_share.h"

#include <string>

#include "gtest/gtest.h"

namespace metasrv::core {
namespace {

// A newcomer's share counts it among the hosts; it may take while within
// it, and the hosts over the share give back, the one holding the most
// first.
TEST(FairShareTest, ANewcomerUnderItsShareTakesFromTheHostsOverTheirs) {
  FairShare<std::string> fair(/*bound=*/100, "new");
  fair.Count("a", 60);
  fair.Count("b", 30);
  fair.Count("c", 10);
  EXPECT_EQ(fair.share(), 25);  // 100 over four hosts.
  EXPECT_TRUE(fair.AskerMayTake());
  EXPECT_TRUE(fair.AskerMayTake(25));
  EXPECT_FALSE(fair.AskerMayTake(26));
  const auto over = fair.Over();
  ASSERT_EQ(over.size(), 2u);
  EXPECT_EQ(over[0], std::make_pair(int64_t{60}, std::string("a")));
  EXPECT_EQ(over[1], std::make_pair(int64_t{30}, std::string("b")));
}

// A host at its share may take no more, and is never among those that
// give back to itself.
TEST(FairShareTest, AHostAtItsShareMayNotTakeAndGivesNothingToItself) {
  FairShare<std::string> fair(/*bound=*/10, "a");
  fair.Count("a", 6);
  fair.Count("b", 4);
  EXPECT_EQ(fair.share(), 5);
  EXPECT_FALSE(fair.AskerMayTake());
  EXPECT_TRUE(fair.Over().empty());
  EXPECT_EQ(fair.held("a"), 6);
  EXPECT_EQ(fair.held("nobody"), 0);
}

// Many hosts past the bound: the share is at least one.
TEST(FairShareTest, TheShareIsAtLeastOne) {
  FairShare<int> fair(/*bound=*/3, 99);
  for (int h = 0; h < 10; ++h) fair.Count(h);
  EXPECT_EQ(fair.share(), 1);
  EXPECT_TRUE(fair.AskerMayTake());
  EXPECT_TRUE(fair.Over().empty());  // Nobody holds more than one.
}

}  // namespace
}  // namespace metasrv::core
