// FlowStateStore alone, as plain data: what a heartbeat writes, the limits
// (nothing changes when one refuses), the expiry orders it keeps only when
// asked, and forgetting.
#include "core/flow_state_store.h"

#include <vector>

#include "core/cluster_info.h"
#include "core/flow_state_keys.h"
#include "gtest/gtest.h"
#include "tests/core/brute_force.h"

namespace metasrv::core {
namespace {

using testing::Report;

FlowStateLimits Bounded(uint64_t max_nodes, uint64_t max_total_flows) {
  FlowStateLimits limits = FlowStateLimits::None();
  limits.max_nodes = max_nodes;
  limits.max_total_flows = max_total_flows;
  return limits;
}

NodeHeartbeat WithReport(FlowStateValue report) {
  NodeHeartbeat hb;
  hb.report = std::move(report);
  return hb;
}

TEST(FlowStateStoreTest, AHeartbeatWritesTheNodeKeyAndTheAggregate) {
  FlowStateStore store(FlowStateLimits::None());
  EXPECT_FALSE(store.has_aggregate());
  EXPECT_EQ(store.key_count(), 0u);
  ASSERT_TRUE(
      store
          .Heartbeat(7, WithReport(Report({{1, 100, 10}, {2, 5, 50}})), 1000, 1)
          .ok());
  EXPECT_TRUE(store.has_aggregate());
  EXPECT_NE(store.node_keys().Find(FlowStateNodeKey(7)), nullptr);
  EXPECT_EQ(store.key_count(), 2u);  // The node's key and __flow/state.
  EXPECT_EQ(store.aggregate().flow_count(), 2u);
  // A heartbeat without a report keeps the report and updates the record.
  ASSERT_TRUE(store.Heartbeat(7, NodeHeartbeat(), 2000, 2).ok());
  const std::vector<FlownodeView> nodes = store.ListFlownodes({});
  ASSERT_EQ(nodes.size(), 1u);
  EXPECT_EQ(nodes[0].record.last_heartbeat_ms, 2000);
  EXPECT_EQ(nodes[0].flow_count, 2u);
}

TEST(FlowStateStoreTest, ARefusedHeartbeatChangesNothing) {
  FlowStateStore store(Bounded(/*max_nodes=*/2, /*max_total_flows=*/3));
  ASSERT_TRUE(store.Heartbeat(1, WithReport(Report({{1, 1, 1}})), 1, 1).ok());
  ASSERT_TRUE(store.Heartbeat(2, WithReport(Report({{2, 2, 2}})), 1, 1).ok());
  // A third node: past max_nodes.
  absl::Status third =
      store.Heartbeat(3, WithReport(Report({{3, 3, 3}})), 1, 1);
  EXPECT_TRUE(absl::IsResourceExhausted(third)) << third;
  EXPECT_NE(third.message().find("--max_nodes"), std::string::npos);
  EXPECT_EQ(store.node_count(), 2u);
  EXPECT_EQ(store.node_keys().Find(FlowStateNodeKey(3)), nullptr);
  // A report that would make 4 (node, flow) entries: past max_total_flows;
  // the node's previous report stays.
  absl::Status grown = store.Heartbeat(
      2, WithReport(Report({{2, 9, 9}, {4, 4, 4}, {5, 5, 5}})), 1, 1);
  EXPECT_TRUE(absl::IsResourceExhausted(grown)) << grown;
  EXPECT_EQ(store.aggregate().flow_count(), 2u);
  EXPECT_EQ(store.ListFlownodes({2})[0].flow_count, 1u);
  // One that keeps within it is taken.
  EXPECT_TRUE(
      store.Heartbeat(2, WithReport(Report({{2, 9, 9}, {4, 4, 4}})), 1, 1)
          .ok());
  EXPECT_EQ(store.aggregate().flow_count(), 3u);
}

TEST(FlowStateStoreTest, SilenceIsTrackedOnlyWithATtl) {
  FlowStateStore untracked(FlowStateLimits::None());
  ASSERT_TRUE(
      untracked.Heartbeat(1, WithReport(Report({{1, 1, 1}})), 1, 10).ok());
  EXPECT_TRUE(untracked.ExpireSilent(1000).empty());
  EXPECT_EQ(untracked.node_count(), 1u);

  FlowStateLimits limits = FlowStateLimits::None();
  limits.node_report_ttl = absl::Seconds(30);
  FlowStateStore store(limits);
  ASSERT_TRUE(store.Heartbeat(1, WithReport(Report({{1, 1, 1}})), 1, 10).ok());
  ASSERT_TRUE(store.Heartbeat(2, WithReport(Report({{2, 2, 2}})), 1, 20).ok());
  ASSERT_TRUE(store.Heartbeat(3, WithReport(Report({{3, 3, 3}})), 1, 30).ok());
  ASSERT_TRUE(store.Heartbeat(1, NodeHeartbeat(), 1, 40).ok());  // 1 again.
  // Before 35: nodes 2 and 3, oldest first; node 1 spoke at 40.
  EXPECT_EQ(store.ExpireSilent(35), (std::vector<uint64_t>{2, 3}));
  EXPECT_EQ(store.node_count(), 1u);
  EXPECT_EQ(store.aggregate().flow_count(), 1u);
  EXPECT_EQ(store.node_keys().Find(FlowStateNodeKey(2)), nullptr);
}

TEST(FlowStateStoreTest, IdleExpiryDropsClusterInfoAndRecordsNotReports) {
  FlowStateLimits limits = FlowStateLimits::None();
  limits.node_max_idle_time = absl::Seconds(60);
  FlowStateStore store(limits);
  NodeHeartbeat hb = WithReport(Report({{1, 100, 10}}));
  hb.cluster_node.emplace();
  hb.cluster_node->role = NodeRole::kFlownode;
  hb.cluster_node->node_id = 1;
  ASSERT_TRUE(store.Heartbeat(1, hb, 1, 10).ok());
  ClusterNode frontend;
  frontend.role = NodeRole::kFrontend;
  frontend.node_id = 99;
  ASSERT_TRUE(store.RecordClusterNode(frontend, 1, 50).ok());
  const IdleExpiry expired = store.ExpireIdle(30);
  EXPECT_EQ(expired.cluster_nodes, 1u);  // The flownode's; the frontend stays.
  EXPECT_EQ(expired.records, 1u);
  EXPECT_TRUE(store.ListFlownodes({}).empty());
  EXPECT_NE(store.node_keys().Find(FlowStateNodeKey(1)), nullptr);
  EXPECT_EQ(store.node_keys().Find(ClusterInfoKey(NodeRole::kFlownode, 1)),
            nullptr);
  EXPECT_NE(store.node_keys().Find(ClusterInfoKey(NodeRole::kFrontend, 99)),
            nullptr);
  EXPECT_EQ(store.aggregate().flow_count(), 1u);
}

TEST(FlowStateStoreTest, ForgettingRemovesFlowsAndNodes) {
  FlowStateStore store(FlowStateLimits::None());
  ASSERT_TRUE(
      store.Heartbeat(1, WithReport(Report({{1, 1, 1}, {2, 2, 2}})), 1, 1)
          .ok());
  ASSERT_TRUE(store.Heartbeat(2, WithReport(Report({{2, 3, 3}})), 1, 1).ok());
  const ForgetResult forgot = store.ForgetFlows({2, 9});
  EXPECT_EQ(forgot.forgotten_flows, 1u);
  EXPECT_EQ(forgot.updated_nodes, 2u);
  EXPECT_EQ(store.aggregate().flow_count(), 1u);
  EXPECT_EQ(store.ForgetNodes(std::vector<uint64_t>{1, 5}), 1u);
  EXPECT_EQ(store.node_count(), 1u);
  EXPECT_EQ(store.node_keys().Find(FlowStateNodeKey(1)), nullptr);
  EXPECT_EQ(store.aggregate().flow_count(), 0u);
}

}  // namespace
}  // namespace metasrv::core
