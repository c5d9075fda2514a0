// Randomized check: after every merge, empty report and reset, the
// incrementally kept aggregate equals a brute-force recomputation from all
// per-node keys in the KV.
#include <map>
#include <random>
#include <string>

#include "core/flow_state_codec.h"
#include "core/flow_state_keys.h"
#include "core/flow_state_manager.h"
#include "gtest/gtest.h"
#include "kv/memory_kv.h"

namespace metasrv::core {
namespace {

// The aggregate recomputed from scratch, the way the reference does it.
std::optional<FlowStateValue> BruteForce(const kv::KvBackend& kv,
                                         bool global_exists) {
  if (!global_exists) return std::nullopt;
  std::map<uint32_t, FlowStat> max;
  absl::StatusOr<kv::RangeResponse> nodes =
      kv.Range({std::string(kFlowStateNodePrefix),
                kv::PrefixEnd(std::string(kFlowStateNodePrefix))});
  EXPECT_TRUE(nodes.ok());
  for (const kv::KeyValue& e : nodes->kvs) {
    absl::StatusOr<FlowStateValue> report = DecodeFlowState(e.value);
    EXPECT_TRUE(report.ok()) << report.status();
    for (const FlowStat& s : report->flows()) {
      FlowStat& m = max[s.flow_id];
      m.flow_id = s.flow_id;
      if (s.has(kStateSize) && (!m.has(kStateSize) || s.state_size > m.state_size)) {
        m.state_size = s.state_size;
      }
      if (s.has(kLastExecTime) &&
          (!m.has(kLastExecTime) || s.last_exec_time > m.last_exec_time)) {
        m.last_exec_time = s.last_exec_time;
      }
      if (s.has(kStartTime) && (!m.has(kStartTime) || s.start_time > m.start_time)) {
        m.start_time = s.start_time;
      }
      m.fields |= s.fields;
    }
  }
  FlowStateValue::Builder b;
  for (const auto& [id, m] : max) {
    if (m.has(kStateSize)) b.SetStateSize(id, m.state_size);
    if (m.has(kLastExecTime)) b.SetLastExecTime(id, m.last_exec_time);
    if (m.has(kStartTime)) b.SetStartTime(id, m.start_time);
  }
  return std::move(b).Build();
}

class RandomMergeTest : public ::testing::TestWithParam<uint32_t> {};

TEST_P(RandomMergeTest, AggregateMatchesBruteForce) {
  std::mt19937 rng(GetParam());
  kv::MemoryKv kv;
  FlowStateManager manager(&kv);
  // Few nodes and flows, so flows are often shared; ids straddle chunks.
  const std::vector<uint32_t> ids = {0, 1, 2, 3, 1023, 1024, 1025, 5000, 4294967295u};
  auto pick = [&](int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); };
  bool merged_since_reset = false;
  for (int step = 0; step < 3000; ++step) {
    const int op = pick(100);
    if (op < 2) {
      ASSERT_TRUE(kv.Reset().ok());
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
    absl::StatusOr<std::optional<FlowStateValue>> got = manager.Get();
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_EQ(*got, BruteForce(kv, merged_since_reset)) << "step " << step;
    // Every holder really reports the max it is credited with.
    auto read = manager.Read({});
    ASSERT_TRUE(read.ok());
    if (!read->has_value()) continue;
    for (const AggregateFlow& f : **read) {
      if (f.stat.has(kStateSize)) {
        auto node = DecodeFlowState(*kv.Get(FlowStateNodeKey(f.state_size_node)));
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
