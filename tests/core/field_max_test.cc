#include "core/field_max.h"

#include "gtest/gtest.h"

namespace metasrv::core {
namespace {

TEST(FieldMaxTest, SingleContributorTracksItsValueBothWays) {
  FieldMax<int64_t> m;
  EXPECT_TRUE(m.empty());
  m.Add(7, 100);
  EXPECT_EQ(m.value(), 100);
  EXPECT_EQ(m.holder(), 7u);
  m.Update(7, 100, 40);  // Lowering the only value lowers the max.
  EXPECT_EQ(m.value(), 40);
  m.Remove(7, 40);
  EXPECT_TRUE(m.empty());
}

TEST(FieldMaxTest, LoweredMaxFallsBackToRunnerUp) {
  FieldMax<uint64_t> m;
  m.Add(1, 10);
  m.Add(2, 30);
  m.Add(3, 20);
  EXPECT_EQ(m.value(), 30u);
  EXPECT_EQ(m.holder(), 2u);
  m.Update(2, 30, 5);
  EXPECT_EQ(m.value(), 20u);
  EXPECT_EQ(m.holder(), 3u);
  m.Remove(3, 20);
  EXPECT_EQ(m.value(), 10u);
  EXPECT_EQ(m.holder(), 1u);
  m.Remove(1, 10);
  EXPECT_EQ(m.count(), 1u);
  EXPECT_EQ(m.value(), 5u);
  EXPECT_EQ(m.holder(), 2u);
  m.Update(2, 5, 1);  // Back to one contributor: follows it down.
  EXPECT_EQ(m.value(), 1u);
}

TEST(FieldMaxTest, TiesGoToTheLargerNode) {
  FieldMax<int64_t> m;
  m.Add(9, -3);
  m.Add(4, -3);
  EXPECT_EQ(m.value(), -3);
  EXPECT_EQ(m.holder(), 9u);
}

}  // namespace
}  // namespace metasrv::core
