#include "core/field_max.h"

#include "gtest/gtest.h"

namespace metasrv::core {
namespace {

// A FieldMax with the max and holder it keeps in its caller's variables.
template <typename T>
struct Tracked {
  void Add(uint64_t node, T v) { m.Add(node, v, value, holder); }
  void Remove(uint64_t node, T v) { m.Remove(node, v, value, holder); }
  void Update(uint64_t node, T a, T b) { m.Update(node, a, b, value, holder); }
  FieldMax<T> m;
  T value{};
  uint64_t holder = 0;
};

TEST(FieldMaxTest, SingleContributorTracksItsValueBothWays) {
  Tracked<int64_t> t;
  EXPECT_TRUE(t.m.empty());
  t.Add(7, 100);
  EXPECT_EQ(t.value, 100);
  EXPECT_EQ(t.holder, 7u);
  t.Update(7, 100, 40);  // Lowering the only value lowers the max.
  EXPECT_EQ(t.value, 40);
  t.Remove(7, 40);
  EXPECT_TRUE(t.m.empty());
}

TEST(FieldMaxTest, LoweredMaxFallsBackToRunnerUp) {
  Tracked<uint64_t> t;
  t.Add(1, 10);
  t.Add(2, 30);
  t.Add(3, 20);
  EXPECT_EQ(t.value, 30u);
  EXPECT_EQ(t.holder, 2u);
  t.Update(2, 30, 5);
  EXPECT_EQ(t.value, 20u);
  EXPECT_EQ(t.holder, 3u);
  t.Remove(3, 20);
  EXPECT_EQ(t.value, 10u);
  EXPECT_EQ(t.holder, 1u);
  t.Remove(1, 10);
  EXPECT_EQ(t.m.count(), 1u);
  EXPECT_EQ(t.value, 5u);
  EXPECT_EQ(t.holder, 2u);
  t.Update(2, 5, 1);  // Back to one contributor: follows it down.
  EXPECT_EQ(t.value, 1u);
}

TEST(FieldMaxTest, TiesGoToTheLargerNode) {
  Tracked<int64_t> t;
  t.Add(9, -3);
  t.Add(4, -3);
  EXPECT_EQ(t.value, -3);
  EXPECT_EQ(t.holder, 9u);
}

}  // namespace
}  // namespace metasrv::core
