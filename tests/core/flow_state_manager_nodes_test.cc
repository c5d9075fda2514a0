// FlowStateManager's per-node side: flownode records, cluster info,
// ListFlownodes, ForgetFlows, idle and stale-node expiry (on a ManualClock:
// no sleeping).
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

// Limits by name: no bound but `max_nodes`, and the two expiries.
FlowStateLimits Limits(absl::Duration report_ttl, uint64_t max_nodes = 0,
                       absl::Duration max_idle = absl::ZeroDuration()) {
  FlowStateLimits limits = FlowStateLimits::None();
  limits.node_report_ttl = report_ttl;
  limits.max_nodes = max_nodes;
  limits.node_max_idle_time = max_idle;
  return limits;
}

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
  FlowStateManager manager_{Limits(absl::Seconds(30), 0, absl::Seconds(60)),
                            &clock_};
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
  ClusterNode cluster;
  cluster.node_id = cluster.peer_id = 1;
  cluster.peer_addr = first.peer_addr;
  cluster.info = info;
  first.cluster_node = cluster;
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
  // The KV holds upstream's cluster info, as of the heartbeat that had it.
  EXPECT_EQ(*kv_.Get(ClusterInfoKey(NodeRole::kFlownode, 1)),
            EncodeClusterNodeInfo(cluster, t0));

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
  hb.cluster_node.emplace();
  hb.cluster_node->node_id = 4;
  ASSERT_TRUE(manager_.Heartbeat(4, hb).ok());
  ASSERT_EQ(manager_.ListFlownodes({}).size(), 1u);
  const int calls = listener_.calls;
  EXPECT_EQ(manager_.Reset().dropped_keys, 3u);
  EXPECT_EQ(listener_.calls, calls + 1);
  EXPECT_TRUE(manager_.ListFlownodes({}).empty());
  EXPECT_FALSE(kv_.Get(ClusterInfoKey(NodeRole::kFlownode, 4)).ok());
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

TEST_F(FlowStateManagerNodesTest, ForgetNodesRemovesReportRecordAndInfo) {
  NodeHeartbeat hb;
  hb.peer_addr = "h:1";
  hb.report = Report({{1, 100, 10}, {2, 200, 20}});
  hb.cluster_node.emplace();
  hb.cluster_node->node_id = 1;
  ASSERT_TRUE(manager_.Heartbeat(1, hb).ok());
  ASSERT_TRUE(manager_.Merge(2, Report({{1, 150, 5}})).ok());
  const int calls = listener_.calls;
  const uint64_t forget[] = {1, 9};  // 9 is unknown.
  absl::StatusOr<uint64_t> forgotten = manager_.ForgetNodes(forget);
  ASSERT_TRUE(forgotten.ok()) << forgotten.status();
  EXPECT_EQ(*forgotten, 1u);
  EXPECT_EQ(listener_.calls, calls + 1);
  EXPECT_FALSE(kv_.Get(FlowStateNodeKey(1)).ok());
  EXPECT_FALSE(kv_.Get(ClusterInfoKey(NodeRole::kFlownode, 1)).ok());
  EXPECT_TRUE(manager_.ListFlownodes(std::vector<uint64_t>{1}).empty());
  std::vector<AggregateFlow> flows = Flows();
  ASSERT_EQ(flows.size(), 1u);  // Flow 2 was node 1's alone.
  EXPECT_EQ(flows[0].stat.state_size, 150u);
  EXPECT_EQ(Check(), "");
  // Forgotten, it no longer expires (its places in the silence order went
  // with it); the other node still does.
  clock_.Advance(absl::Seconds(31));
  EXPECT_EQ(manager_.ExpireSilentNodes(), std::vector<uint64_t>{2});
  // Nothing known: nothing written, nobody told.
  const int after = listener_.calls;
  EXPECT_EQ(*manager_.ForgetNodes(forget), 0u);
  EXPECT_EQ(listener_.calls, after);
  EXPECT_EQ(manager_.ForgetNodes({}).status().code(),
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
  EXPECT_TRUE(manager_.ListFlownodes(std::vector<uint64_t>{1}).empty());
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
  FlowStateManager manager(Limits(absl::Seconds(30)), &clock);
  ASSERT_TRUE(manager.Merge(1, Report({{1, 1, 1}})).ok());
  clock.wall.Advance(absl::Hours(1));  // NTP step, or someone set the date.
  EXPECT_TRUE(manager.ExpireSilentNodes().empty());
  EXPECT_EQ(manager.node_count(), 1u);
  clock.mono.Advance(absl::Seconds(31));  // Real silence.
  EXPECT_EQ(manager.ExpireSilentNodes(), std::vector<uint64_t>{1});
}

// GreptimeDB's node_max_idle_time: an idle node's cluster info and record
// go, its flow state stays; a heartbeat brings the record back.
TEST_F(FlowStateManagerNodesTest, IdleNodesLoseClusterInfoAndRecordNotFlows) {
  FlowStateManager manager(Limits(absl::ZeroDuration(), 0, absl::Seconds(60)),
                           &clock_);
  NodeHeartbeat hb;
  hb.report = Report({{1, 100, 10}});
  hb.cluster_node.emplace();
  hb.cluster_node->node_id = 1;
  ASSERT_TRUE(manager.Heartbeat(1, hb).ok());
  ClusterNode frontend;
  frontend.role = NodeRole::kFrontend;
  frontend.node_id = 99;
  clock_.Advance(absl::Seconds(30));
  ASSERT_TRUE(manager.RecordNode(frontend).ok());
  clock_.Advance(absl::Seconds(30));
  // Exactly 60 s: not yet past it.
  EXPECT_EQ(manager.ExpireIdleNodes().records, 0u);
  clock_.Advance(absl::Milliseconds(1));
  const IdleExpiry first = manager.ExpireIdleNodes();
  EXPECT_EQ(first.records, 1u);
  EXPECT_EQ(first.cluster_nodes, 1u);
  EXPECT_FALSE(manager.Get(ClusterInfoKey(NodeRole::kFlownode, 1)).ok());
  EXPECT_TRUE(manager.Get(ClusterInfoKey(NodeRole::kFrontend, 99)).ok());
  EXPECT_TRUE(manager.ListFlownodes({}).empty());
  // The flow state lingers, as the seed says of a silent flownode.
  EXPECT_TRUE(manager.Get(FlowStateNodeKey(1)).ok());
  ASSERT_EQ(manager.Read({})->size(), 1u);
  EXPECT_EQ(manager.node_count(), 1u);
  clock_.Advance(absl::Seconds(30));
  EXPECT_EQ(manager.ExpireIdleNodes().cluster_nodes, 1u);
  EXPECT_FALSE(manager.Get(ClusterInfoKey(NodeRole::kFrontend, 99)).ok());
  // Heard from again: listed again, with its report as it was.
  ASSERT_TRUE(manager.Heartbeat(1, NodeHeartbeat()).ok());
  ASSERT_EQ(manager.ListFlownodes({}).size(), 1u);
  EXPECT_EQ(manager.ListFlownodes({})[0].flow_count, 1u);
  EXPECT_EQ(manager.ExpireIdleNodes().records, 0u);
}

TEST_F(FlowStateManagerNodesTest, ClusterInfoPerRoleIsBoundedByMaxNodes) {
  FlowStateManager manager(Limits(absl::ZeroDuration(), 2, absl::Seconds(60)),
                           &clock_);
  ClusterNode frontend;
  frontend.role = NodeRole::kFrontend;
  for (uint64_t id : {1, 2, 1}) {
    frontend.node_id = id;
    ASSERT_TRUE(manager.RecordNode(frontend).ok());
  }
  frontend.node_id = 3;
  absl::Status refused = manager.RecordNode(frontend);
  EXPECT_TRUE(absl::IsResourceExhausted(refused)) << refused;
  EXPECT_FALSE(manager.Get(ClusterInfoKey(NodeRole::kFrontend, 3)).ok());
  // Another role has its own room; a flownode whose peer id is new each
  // time cannot grow the keys past it either.
  NodeHeartbeat hb;
  hb.cluster_node.emplace();
  for (uint64_t peer : {7, 8}) {
    hb.cluster_node->node_id = peer;
    ASSERT_TRUE(manager.Heartbeat(1, hb).ok());
  }
  hb.cluster_node->node_id = 9;
  EXPECT_TRUE(absl::IsResourceExhausted(manager.Heartbeat(1, hb)));
  EXPECT_EQ(manager.ListFlownodes({})[0].record.last_heartbeat_ms,
            absl::ToUnixMillis(clock_.Now()));
}

TEST(FlowStateManagerNoTtlTest, NothingExpiresWithoutATtl) {
  ManualClock clock;
  FlowStateManager manager(Limits(absl::ZeroDuration()), &clock);
  ASSERT_TRUE(manager.Merge(1, Report({{1, 1, 1}})).ok());
  clock.Advance(absl::Hours(24 * 365));
  EXPECT_TRUE(manager.ExpireSilentNodes().empty());
  EXPECT_EQ(manager.node_count(), 1u);
}

// Heartbeats, forgets, expiries and resets from many threads; afterwards the
// aggregate must equal the brute-force one over the KV, and the index must
// list exactly the nodes whose cluster info the KV holds.
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
        hb.cluster_node.emplace();
        hb.cluster_node->node_id = node;
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
      const uint64_t node = static_cast<uint64_t>((i % kWriters) * 10 + i % 7);
      ASSERT_TRUE(manager_.ForgetNodes(absl::MakeConstSpan(&node, 1)).ok());
      clock_.Advance(absl::Milliseconds(200));
      manager_.ExpireSilentNodes();
      manager_.ExpireIdleNodes();
      if (i % 100 == 99) manager_.Reset();
    }
  });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(Check(), "");
  std::vector<FlownodeView> nodes = manager_.ListFlownodes({});
  const std::string prefix(kClusterInfoPrefix);
  auto records = kv_.Range({prefix, kv::PrefixEnd(prefix), 0, true});
  std::set<std::string> listed, stored;
  for (const FlownodeView& node : nodes)
    listed.insert(ClusterInfoKey(NodeRole::kFlownode, node.node_id));
  for (const kv::KeyValue& kv : records->kvs) stored.insert(kv.key);
  EXPECT_EQ(listed, stored);
  EXPECT_EQ(listed.size(), nodes.size());
}

// At --max_nodes a new flownode with a stream open takes the place of the
// node silent longest that has none; below it, and without a stream,
// nothing changes.
// A node is live by its reports, whatever streams are open: at the bound a
// new node takes the place of one that never reported, else of the one
// whose last report is oldest once that is past the live window; never of
// one that reported within it (a flownode restarting keeps its flows).
TEST(FlowStateManagerEvictionTest, ANewNodeTakesTheQuietestPlaceNeverALiveOne) {
  ManualClock clock;
  FlowStateLimits limits = Limits(absl::ZeroDuration(), /*max_nodes=*/3);
  limits.live_report_window = absl::Seconds(10);
  FlowStateManager manager(limits, &clock);
  auto beat = [&](uint64_t node, std::optional<uint32_t> flow) {
    NodeHeartbeat heartbeat;
    if (flow.has_value()) heartbeat.report = Report({{*flow, *flow * 10, 1}});
    std::optional<uint64_t> evicted;
    absl::Status status =
        manager.Heartbeat(node, heartbeat, std::nullopt, &evicted);
    return std::make_pair(status, evicted);
  };
  auto flows = [&] {
    std::vector<uint32_t> ids;
    const std::vector<AggregateFlow> read = manager.Read({}).value();
    for (const AggregateFlow& flow : read) ids.push_back(flow.stat.flow_id);
    return ids;
  };
  for (uint64_t node = 1; node <= 3; ++node) {
    ASSERT_TRUE(beat(node, node).first.ok());
    clock.Advance(absl::Seconds(1));
  }
  // t = 3 s: everyone reported within 10 s: the new node is refused.
  auto [refused, none] = beat(4, 4);
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_FALSE(none.has_value());
  // t = 11 s: node 2 reports again (a restart, say); node 1's report is
  // 11 s old: the new node takes its place, not node 2's.
  clock.Advance(absl::Seconds(8));
  ASSERT_TRUE(beat(2, 2).first.ok());
  auto [in, evicted] = beat(4, 4);
  ASSERT_TRUE(in.ok()) << in;
  EXPECT_EQ(evicted, std::optional<uint64_t>(1));
  EXPECT_EQ(flows(), (std::vector<uint32_t>{2, 3, 4}));
  // A node that never reported goes first, however lately it heartbeated.
  ASSERT_EQ(manager.ForgetNodes({3}).value(), 1u);
  ASSERT_TRUE(beat(6, std::nullopt).first.ok());
  auto [next, quiet] = beat(7, 7);
  ASSERT_TRUE(next.ok()) << next;
  EXPECT_EQ(quiet, std::optional<uint64_t>(6));
  // Heartbeats without reports keep nobody live: 10 s on, node 2's report
  // (at 11 s) is the oldest.
  clock.Advance(absl::Seconds(10) + absl::Milliseconds(1));
  ASSERT_TRUE(beat(4, std::nullopt).first.ok());
  auto [last, oldest] = beat(8, 8);
  ASSERT_TRUE(last.ok()) << last;
  EXPECT_EQ(oldest, std::optional<uint64_t>(2));
  EXPECT_EQ(flows(), (std::vector<uint32_t>{4, 7, 8}));
}

// Hardening round 7: node slots were one pool. 20,000 made-up ids from one
// host, each a handshake and one report, kept a new flownode of another
// host out for as long as they stayed live. Now, when every node is live,
// the slots are shared by host: a newcomer under its host's share takes the
// oldest-reporting node of the host holding the most; a live node of a
// host within its share is never taken.
TEST(FlowStateManagerEvictionTest, LiveNodeSlotsAreSharedByHost) {
  ManualClock clock;
  FlowStateLimits limits = Limits(absl::ZeroDuration(), /*max_nodes=*/4);
  limits.live_report_window = absl::Seconds(10);
  FlowStateManager manager(limits, &clock);
  auto beat = [&](uint64_t node, const std::string& origin) {
    NodeHeartbeat heartbeat;
    heartbeat.report = Report({{static_cast<uint32_t>(node), 1, 1}});
    heartbeat.origin = origin;
    std::optional<uint64_t> evicted;
    absl::Status status =
        manager.Heartbeat(node, heartbeat, std::nullopt, &evicted);
    clock.Advance(absl::Milliseconds(100));
    return std::make_pair(status, evicted);
  };
  // One host's made-up ids take every slot, all live.
  for (uint64_t node = 1; node <= 4; ++node) {
    ASSERT_TRUE(beat(node, "attacker").first.ok());
  }
  // Its next is refused: it holds its share (all of them) and more.
  EXPECT_EQ(beat(5, "attacker").first.code(),
            absl::StatusCode::kResourceExhausted);
  // Another host's new flownode takes the attacker's oldest-reporting node.
  auto [in, evicted] = beat(100, "honest");
  ASSERT_TRUE(in.ok()) << in;
  EXPECT_EQ(evicted, std::optional<uint64_t>(1));
  // The attacker (3 of 4, share 2) cannot take it back.
  EXPECT_EQ(beat(6, "attacker").first.code(),
            absl::StatusCode::kResourceExhausted);
  // A third host (share 1) takes the attacker's next oldest.
  auto [third, next] = beat(200, "third");
  ASSERT_TRUE(third.ok()) << third;
  EXPECT_EQ(next, std::optional<uint64_t>(2));
  // The honest host is within its share: its live node is never taken,
  // whatever a host at its own share asks (attacker 2, share 1: over).
  auto [honest_again, none] = beat(101, "honest");
  EXPECT_EQ(honest_again.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_FALSE(none.has_value());
  // A node of no known host takes no live node.
  EXPECT_EQ(beat(300, "").first.code(), absl::StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace metasrv::core
