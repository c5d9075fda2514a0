// FlowStateManager's per-node side: flownode records, ListFlownodes,
// ForgetFlows and stale-node expiry (on a ManualClock: no sleeping).
#include <atomic>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/clock.h"
#include "core/flow_state_codec.h"
#include "core/flow_state_keys.h"
#include "core/flow_state_manager.h"
#include "gtest/gtest.h"
#include "tests/core/brute_force.h"

namespace metasrv::core {
namespace {

using Builder = FlowStateValue::Builder;

using testing::Report;

// Counts notifications.
class CountingListener final : public FlowStateListener {
 public:
  void OnFlowStateChanged() override { ++calls; }
  std::atomic<int> calls{0};
};

class FlowStateManagerNodesTest : public ::testing::Test {
 protected:
  FlowStateManagerNodesTest() { manager_.SetListener(&listener_); }

  int64_t NowMs() const { return absl::ToUnixMillis(clock_.Now()); }
  std::vector<AggregateFlow> Flows() {
    return manager_.Read({}).value_or(std::vector<AggregateFlow>());
  }
  std::string Check() { return testing::CheckAggregate(manager_); }

  ManualClock clock_;
  CountingListener listener_;
  FlowStateManager manager_{{&clock_, absl::Seconds(30)}};
  FlowStateManager& kv_ = manager_;  // The KV view, read as a client does.
};

TEST_F(FlowStateManagerNodesTest, HeartbeatRecordsPeerInfoAndTimes) {
  NodeInfo info;
  info.version = "v1";
  info.hostname = "fn-1";
  info.total_cpu_millicores = 2000;
  NodeHeartbeat first;
  first.peer_addr = "10.0.0.1:6800";
  first.info = info;
  ASSERT_TRUE(manager_.Heartbeat(1, first).ok());
  const int64_t t0 = NowMs();
  EXPECT_EQ(listener_.calls, 0);  // No report: the aggregate did not change.

  clock_.Advance(absl::Seconds(3));
  NodeHeartbeat second;  // No peer, no info: the last known ones stay.
  second.report = Report({{5, 50, 500}, {6, 60, 600}});
  ASSERT_TRUE(manager_.Heartbeat(1, second).ok());
  EXPECT_EQ(listener_.calls, 1);

  std::vector<FlownodeView> nodes = manager_.ListFlownodes({});
  ASSERT_EQ(nodes.size(), 1u);
  const FlownodeView& node = nodes[0];
  EXPECT_EQ(node.node_id, 1u);
  EXPECT_EQ(node.record.peer_addr, "10.0.0.1:6800");
  EXPECT_EQ(node.record.last_heartbeat_ms, t0 + 3000);
  EXPECT_EQ(node.record.last_report_ms, t0 + 3000);
  EXPECT_EQ(node.flow_count, 2u);
  ASSERT_TRUE(node.record.info.has_value());
  EXPECT_EQ(*node.record.info, info);
  // The record in the KV says the same.
  absl::StatusOr<FlownodeRecord> stored =
      DecodeFlownodeRecord(*kv_.Get(FlownodeKey(1)));
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_EQ(*stored, node.record);

  clock_.Advance(absl::Seconds(3));
  ASSERT_TRUE(manager_.Heartbeat(1, NodeHeartbeat()).ok());
  nodes = manager_.ListFlownodes({});
  EXPECT_EQ(nodes[0].record.last_heartbeat_ms, t0 + 6000);
  EXPECT_EQ(nodes[0].record.last_report_ms, t0 + 3000);
  EXPECT_EQ(nodes[0].flow_count, 2u);
}

TEST_F(FlowStateManagerNodesTest, ListFlownodesFiltersAndSorts) {
  for (uint64_t node : {7, 3, 5}) {
    ASSERT_TRUE(manager_.Merge(node, Report({{1, node, 1}})).ok());
  }
  auto all = manager_.ListFlownodes({});
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].node_id, 3u);
  EXPECT_EQ(all[2].node_id, 7u);
  const uint64_t some_ids[] = {7, 4, 3, 7};  // 4 is unknown; 7 twice.
  auto some = manager_.ListFlownodes(some_ids);
  ASSERT_EQ(some.size(), 2u);
  EXPECT_EQ(some[0].node_id, 3u);
  EXPECT_EQ(some[1].node_id, 7u);
}

TEST_F(FlowStateManagerNodesTest, ResetForgetsRecordsToo) {
  NodeHeartbeat hb;
  hb.peer_addr = "h:1";
  hb.report = Report({{1, 10, 100}});
  ASSERT_TRUE(manager_.Heartbeat(4, hb).ok());
  ASSERT_EQ(manager_.ListFlownodes({}).size(), 1u);
  const int calls = listener_.calls;
  EXPECT_EQ(manager_.Reset().dropped_keys, 3u);
  EXPECT_EQ(listener_.calls, calls + 1);
  EXPECT_TRUE(manager_.ListFlownodes({}).empty());
  EXPECT_FALSE(kv_.Get(FlownodeKey(4)).ok());
  // The node comes back as new: its peer is not remembered across the reset.
  ASSERT_TRUE(manager_.Heartbeat(4, NodeHeartbeat()).ok());
  EXPECT_EQ(manager_.ListFlownodes({})[0].record.peer_addr, "");
}

TEST_F(FlowStateManagerNodesTest, ForgetFlowsRemovesThemFromEveryNode) {
  ASSERT_TRUE(manager_.Merge(1, Report({{1, 100, 10}, {2, 200, 20}})).ok());
  ASSERT_TRUE(manager_.Merge(2, Report({{1, 150, 5}, {3, 300, 30}})).ok());
  ASSERT_TRUE(manager_.Merge(3, Report({{3, 1, 1}})).ok());
  const int calls = listener_.calls;
  const uint32_t forget[] = {1, 9, 1};  // 9 is unknown; 1 twice.
  absl::StatusOr<ForgetResult> result = manager_.ForgetFlows(forget);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->forgotten_flows, 1u);
  EXPECT_EQ(result->updated_nodes, 2u);
  EXPECT_EQ(listener_.calls, calls + 1);
  EXPECT_EQ(
      *kv_.Get(FlowStateNodeKey(1)),
      R"({"state_size":{"2":200},"last_exec_time_map":{"2":20},"start_time_map":{}})");
  EXPECT_EQ(
      *kv_.Get(FlowStateNodeKey(2)),
      R"({"state_size":{"3":300},"last_exec_time_map":{"3":30},"start_time_map":{}})");
  std::vector<AggregateFlow> flows = Flows();
  ASSERT_EQ(flows.size(), 2u);
  EXPECT_EQ(flows[0].stat.flow_id, 2u);
  EXPECT_EQ(flows[1].stat.flow_id, 3u);
  EXPECT_EQ(flows[1].state_size_node, 2u);
  EXPECT_EQ(Check(), "");
  // Nothing left to forget: nothing written, nobody told.
  result = manager_.ForgetFlows(forget);
  EXPECT_EQ(result->forgotten_flows, 0u);
  EXPECT_EQ(result->updated_nodes, 0u);
  EXPECT_EQ(listener_.calls, calls + 1);
  EXPECT_EQ(manager_.ForgetFlows({}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(FlowStateManagerNodesTest, SilentNodesExpireAfterTheTtl) {
  ASSERT_TRUE(manager_.Merge(1, Report({{1, 100, 10}})).ok());
  ASSERT_TRUE(manager_.Merge(2, Report({{1, 50, 20}, {2, 5, 5}})).ok());
  clock_.Advance(absl::Seconds(20));
  ASSERT_TRUE(manager_.Heartbeat(2, NodeHeartbeat()).ok());  // Still alive.
  clock_.Advance(absl::Seconds(10));
  // Node 1 was last heard from exactly 30 s ago: not yet older than the TTL.
  EXPECT_TRUE(manager_.ExpireSilentNodes().empty());
  clock_.Advance(absl::Milliseconds(1));
  const int calls = listener_.calls;
  EXPECT_EQ(manager_.ExpireSilentNodes().size(), 1u);
  EXPECT_EQ(listener_.calls, calls + 1);
  EXPECT_FALSE(kv_.Get(FlowStateNodeKey(1)).ok());
  EXPECT_FALSE(kv_.Get(FlownodeKey(1)).ok());
  std::vector<AggregateFlow> flows = Flows();
  ASSERT_EQ(flows.size(), 2u);
  EXPECT_EQ(flows[0].stat.state_size, 50u);  // Node 2's value is the max now.
  EXPECT_EQ(flows[0].stat.last_exec_time, 20);
  EXPECT_EQ(Check(), "");
  clock_.Advance(absl::Seconds(31));
  EXPECT_EQ(manager_.ExpireSilentNodes().size(), 1u);
  EXPECT_TRUE(Flows().empty());
  EXPECT_EQ(manager_.node_count(), 0u);
  EXPECT_EQ(Check(), "");
}

TEST(FlowStateManagerClockTest, AWallClockStepExpiresNobody) {
  SplitClock clock;
  FlowStateManager manager({&clock, absl::Seconds(30)});
  ASSERT_TRUE(manager.Merge(1, Report({{1, 1, 1}})).ok());
  clock.wall.Advance(absl::Hours(1));  // NTP step, or someone set the date.
  EXPECT_TRUE(manager.ExpireSilentNodes().empty());
  EXPECT_EQ(manager.node_count(), 1u);
  clock.mono.Advance(absl::Seconds(31));  // Real silence.
  EXPECT_EQ(manager.ExpireSilentNodes(), std::vector<uint64_t>{1});
}

TEST(FlowStateManagerNoTtlTest, NothingExpiresWithoutATtl) {
  ManualClock clock;
  FlowStateManager manager({&clock, absl::ZeroDuration()});
  ASSERT_TRUE(manager.Merge(1, Report({{1, 1, 1}})).ok());
  clock.Advance(absl::Hours(24 * 365));
  EXPECT_TRUE(manager.ExpireSilentNodes().empty());
  EXPECT_EQ(manager.node_count(), 1u);
}

// Heartbeats, forgets, expiries and resets from many threads; afterwards the
// aggregate must equal the brute-force one over the KV, and the index must
// list exactly the nodes whose records the KV holds.
TEST_F(FlowStateManagerNodesTest, ConcurrentChangesKeepTheAggregateExact) {
  constexpr int kWriters = 6;
  constexpr int kRounds = 400;
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([this, w] {
      for (int i = 0; i < kRounds; ++i) {
        const uint64_t node = static_cast<uint64_t>(w * 10 + i % 7);
        NodeHeartbeat hb;
        hb.peer_addr = "n:" + std::to_string(node);
        if (i % 3 != 0) {
          hb.report = Report({{static_cast<uint32_t>(i % 13), uint64_t(i), i},
                              {static_cast<uint32_t>(w), uint64_t(w), w}});
        }
        ASSERT_TRUE(manager_.Heartbeat(node, hb).ok());
      }
    });
  }
  threads.emplace_back([this] {
    for (int i = 0; i < kRounds; ++i) {
      const uint32_t id = static_cast<uint32_t>(i % 13);
      ASSERT_TRUE(manager_.ForgetFlows(absl::MakeConstSpan(&id, 1)).ok());
      clock_.Advance(absl::Milliseconds(200));
      manager_.ExpireSilentNodes();
      if (i % 100 == 99) manager_.Reset();
    }
  });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(Check(), "");
  std::vector<FlownodeView> nodes = manager_.ListFlownodes({});
  const std::string prefix(kFlownodePrefix);
  auto records = kv_.Range({prefix, kv::PrefixEnd(prefix), 0, true});
  std::set<std::string> listed, stored;
  for (const FlownodeView& node : nodes)
    listed.insert(FlownodeKey(node.node_id));
  for (const kv::KeyValue& kv : records->kvs) stored.insert(kv.key);
  EXPECT_EQ(listed, stored);
  EXPECT_EQ(listed.size(), nodes.size());
}

}  // namespace
}  // namespace metasrv::core
