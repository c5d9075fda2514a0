// Randomized check: after every merge, empty report and reset, the
// incrementally kept aggregate equals a brute-force recomputation from all
// per-node keys in the KV.
#include <random>
#include <string>

#include "core/flow_state_codec.h"
#include "core/flow_state_keys.h"
#include "core/flow_state_manager.h"
#include "gtest/gtest.h"
#include "tests/core/brute_force.h"

namespace metasrv::core {
namespace {

class RandomMergeTest : public ::testing::TestWithParam<uint32_t> {};

TEST_P(RandomMergeTest, AggregateMatchesBruteForce) {
  std::mt19937 rng(GetParam());
  FlowStateManager manager;
  // Few nodes and flows, so flows are often shared; ids straddle chunks.
  const std::vector<uint32_t> ids = {0, 1, 2, 3, 1023, 1024, 1025, 5000, 4294967295u};
  auto pick = [&](int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); };
  bool merged_since_reset = false;
  for (int step = 0; step < 3000; ++step) {
    const int op = pick(100);
    if (op < 2) {
      manager.Reset();
      merged_since_reset = false;
    } else {
      FlowStateValue::Builder b;
      const int flows = op < 10 ? 0 : pick(6);
      for (int f = 0; f < flows; ++f) {
        const uint32_t id = ids[pick(ids.size())];
        // Small value ranges make ties and lowered maxima common.
        if (pick(4) != 0) b.SetStateSize(id, pick(5));
        if (pick(4) != 0) b.SetLastExecTime(id, pick(7) - 3);
        if (pick(3) == 0) b.SetStartTime(id, pick(4));
      }
      ASSERT_TRUE(manager.Merge(pick(6), std::move(b).Build()).ok());
      merged_since_reset = true;
    }
    ASSERT_EQ(::metasrv::testing::CheckAggregate(manager), "") << "step " << step;
    ASSERT_EQ(manager.Aggregate().has_value(), merged_since_reset) << "step " << step;
    // Every holder really reports the max it is credited with.
    std::optional<std::vector<AggregateFlow>> read = manager.Read({});
    if (!read.has_value()) continue;
    for (const AggregateFlow& f : *read) {
      if (f.stat.has(kStateSize)) {
        auto node =
            DecodeFlowState(*manager.Get(FlowStateNodeKey(f.state_size_node)));
        ASSERT_TRUE(node.ok());
        ASSERT_NE(node->Find(f.stat.flow_id), nullptr);
        EXPECT_EQ(node->Find(f.stat.flow_id)->state_size, f.stat.state_size);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Seeds, RandomMergeTest, ::testing::Values(1u, 2u, 3u, 42u));

}  // namespace
}  // namespace metasrv::core
