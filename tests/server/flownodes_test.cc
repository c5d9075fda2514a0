// End to end over gRPC: ListFlownodes, GetFlowState's node columns, the
// flow_start_time_map extension, ForgetFlows and --node_report_ttl (on a
// ManualClock, so no test waits for a TTL to pass).
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/clock.h"
#include "gtest/gtest.h"
#include "metasrv/v1/metasrv.grpc.pb.h"
#include "tests/server/in_process_server.h"
#include "tests/server/test_util.h"

namespace metasrv::testing {
namespace {

using metasrv::v1::Flownode;
using metasrv::v1::FlowStartTimes;

// A flownode heartbeat carrying a peer address and NodeInfo.
meta::HeartbeatRequest WithPeerAndInfo(meta::HeartbeatRequest req,
                                       const std::string& addr,
                                       const std::string& hostname) {
  req.mutable_peer()->set_addr(addr);
  req.mutable_peer()->set_id(req.header().member_id());
  meta::NodeInfo* info = req.mutable_info();
  info->set_version("0.12.1");
  info->set_git_commit("deadbeef");
  info->set_start_time_ms(1700000000000);
  info->set_hostname(hostname);
  info->set_total_cpu_millicores(4000);
  info->set_total_memory_bytes(int64_t{8} << 30);
  info->set_cpu_usage_millicores(900);
  info->set_memory_usage_bytes(int64_t{1} << 30);
  return req;
}

// `req` with the start-time extension holding `start_times`.
meta::HeartbeatRequest WithStartTimes(
    meta::HeartbeatRequest req,
    const std::vector<std::pair<uint32_t, int64_t>>& start_times) {
  FlowStartTimes ext;
  for (const auto& [flow, ms] : start_times)
    (*ext.mutable_start_time_ms())[flow] = ms;
  (*req.mutable_extensions())["flow_start_time_map"] = ext.SerializeAsString();
  return req;
}

class FlownodesTest : public InProcessServerTest {
 protected:
  server::ServerOptions Options() override {
    server::ServerOptions options = InProcessServerTest::Options();
    options.clock = &clock_;
    options.flow_state.node_report_ttl = absl::Seconds(10);
    return options;
  }

  std::vector<Flownode> List(const std::vector<uint64_t>& node_ids = {}) {
    auto stub = metasrv::v1::FlowState::NewStub(channel_);
    grpc::ClientContext ctx;
    metasrv::v1::ListFlownodesRequest req;
    for (uint64_t id : node_ids) req.add_node_ids(id);
    metasrv::v1::ListFlownodesResponse resp;
    grpc::Status s = stub->ListFlownodes(&ctx, req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return {resp.nodes().begin(), resp.nodes().end()};
  }

  metasrv::v1::GetFlowStateResponse GetWithNodes() {
    auto stub = metasrv::v1::FlowState::NewStub(channel_);
    grpc::ClientContext ctx;
    metasrv::v1::GetFlowStateRequest req;
    req.set_with_nodes(true);
    metasrv::v1::GetFlowStateResponse resp;
    EXPECT_TRUE(stub->GetFlowState(&ctx, req, &resp).ok());
    return resp;
  }

  grpc::Status Forget(const std::vector<uint32_t>& flow_ids,
                      metasrv::v1::ForgetFlowsResponse* resp) {
    auto stub = metasrv::v1::Admin::NewStub(channel_);
    grpc::ClientContext ctx;
    metasrv::v1::ForgetFlowsRequest req;
    for (uint32_t id : flow_ids) req.add_flow_ids(id);
    return stub->ForgetFlows(&ctx, req, resp);
  }

  int64_t NowMs() const { return absl::ToUnixMillis(clock_.Now()); }

  core::ManualClock clock_;  // The server's clock.
};

TEST_F(FlownodesTest, ListFlownodesShowsEachNodeAndAResetClearsIt) {
  HeartbeatClient a(channel_), b(channel_);
  const int64_t t0 = NowMs();
  ASSERT_TRUE(a.Call(
      WithPeerAndInfo(Request(meta::FLOWNODE, 1), "10.0.0.1:6800", "fn-a")));
  ASSERT_TRUE(b.Call(Request(meta::FLOWNODE, 2)));  // Handshake only.
  // Frontends and datanodes are not flownodes.
  HeartbeatClient frontend(channel_);
  ASSERT_TRUE(frontend.Call(Request(meta::FRONTEND, 9)));
  clock_.Advance(absl::Seconds(3));
  ASSERT_TRUE(
      a.Call(FlowReport(1, {{10, 100, 1}, {11, 110, 1}, {12, 120, 1}})));

  std::vector<Flownode> nodes = List();
  ASSERT_EQ(nodes.size(), 2u);
  EXPECT_EQ(nodes[0].node_id(), 1u);
  EXPECT_EQ(nodes[0].peer_addr(), "10.0.0.1:6800");  // Kept from earlier.
  EXPECT_EQ(nodes[0].last_heartbeat_ms(), t0 + 3000);
  EXPECT_EQ(nodes[0].last_report_ms(), t0 + 3000);
  EXPECT_EQ(nodes[0].flow_count(), 3u);
  EXPECT_EQ(nodes[0].info().hostname(), "fn-a");
  EXPECT_EQ(nodes[0].info().version(), "0.12.1");
  EXPECT_EQ(nodes[0].info().total_cpu_millicores(), 4000);
  EXPECT_EQ(nodes[0].info().memory_usage_bytes(), int64_t{1} << 30);
  EXPECT_EQ(nodes[1].node_id(), 2u);
  EXPECT_EQ(nodes[1].last_heartbeat_ms(), t0);
  EXPECT_EQ(nodes[1].last_report_ms(), 0);
  EXPECT_EQ(nodes[1].flow_count(), 0u);
  EXPECT_FALSE(nodes[1].has_info());
  ASSERT_EQ(List({2, 5}).size(), 1u);
  // Its cluster info is in the KV, as GreptimeDB's frontends read it (the
  // heartbeat with a peer and a NodeInfo wrote it, at t0).
  std::optional<std::string> raw =
      RangeGet(channel_, "__meta_cluster_node_info-0-2-1");
  ASSERT_TRUE(raw.has_value());
  EXPECT_NE(
      raw->find(absl::StrCat(
          R"({"peer":{"id":1,"addr":"10.0.0.1:6800"},"last_activity_ts":)", t0,
          R"(,"status":{"Flownode":{"workloads":{"types":[]}}},)")),
      std::string::npos)
      << *raw;
  EXPECT_NE(raw->find(R"("hostname":"fn-a","env_vars":{}})"), std::string::npos)
      << *raw;

  auto admin = metasrv::v1::Admin::NewStub(channel_);
  grpc::ClientContext ctx;
  metasrv::v1::LeaderChangeResponse resp;
  ASSERT_TRUE(admin->LeaderChange(&ctx, {}, &resp).ok());
  EXPECT_TRUE(List().empty());
  EXPECT_FALSE(
      RangeGet(channel_, "__meta_cluster_node_info-0-2-1").has_value());
}

TEST_F(FlownodesTest, GetFlowStateSaysWhichNodeHoldsEachMax) {
  HeartbeatClient a(channel_), b(channel_);
  ASSERT_TRUE(a.Call(FlowReport(1, {{7, 100, 10}, {8, 5, 5}})));
  ASSERT_TRUE(b.Call(WithStartTimes(FlowReport(2, {{7, 50, 20}}), {{7, 999}})));
  metasrv::v1::GetFlowStateResponse state = GetWithNodes();
  ASSERT_EQ(state.flow_ids_size(), 2);
  ASSERT_EQ(state.state_size_nodes_size(), 2);
  ASSERT_EQ(state.last_exec_time_nodes_size(), 2);
  ASSERT_EQ(state.start_time_nodes_size(), 2);
  EXPECT_EQ(state.flow_ids(0), 7u);
  EXPECT_EQ(state.state_size_nodes(0), 1u);      // 100 > 50
  EXPECT_EQ(state.last_exec_time_nodes(0), 2u);  // 20 > 10
  EXPECT_EQ(state.start_time_nodes(0), 2u);      // Only node 2 sent one.
  EXPECT_EQ(state.state_size_nodes(1), 1u);
  // Without with_nodes the node columns stay empty.
  const FlowStateRows plain = GetFlowState(channel_);
  EXPECT_EQ(plain.flows.size(), 2u);
  auto stub = metasrv::v1::FlowState::NewStub(channel_);
  grpc::ClientContext ctx;
  metasrv::v1::GetFlowStateResponse resp;
  ASSERT_TRUE(stub->GetFlowState(&ctx, {}, &resp).ok());
  EXPECT_EQ(resp.state_size_nodes_size(), 0);
}

TEST_F(FlownodesTest, StartTimesFromTheExtensionReachEveryReader) {
  HeartbeatClient with_ext(channel_), without(channel_);
  ASSERT_TRUE(with_ext.Call(WithStartTimes(FlowReport(1, {{1, 10, 100}}),
                                           {{1, 1700000000123}, {2, 5}})));
  ASSERT_TRUE(without.Call(FlowReport(2, {{3, 30, 300}})));
  // Flow 2 has only a start time; flow 3's node sent none.
  EXPECT_EQ(
      *RangeGet(channel_, "__flow/state"),
      R"({"state_size":{"1":10,"3":30},"last_exec_time_map":{"1":100,"3":300},)"
      R"("start_time_map":{"1":1700000000123,"2":5}})");
  EXPECT_EQ(
      *RangeGet(channel_, "__flow/state/node/2"),
      R"({"state_size":{"3":30},"last_exec_time_map":{"3":300},"start_time_map":{}})");
  const FlowStateRows rows = GetFlowState(channel_);
  ASSERT_EQ(rows.flows.size(), 3u);
  EXPECT_TRUE(rows.flows[0].has(metasrv::v1::FLOW_FIELD_START_TIME));
  EXPECT_EQ(rows.flows[0].start_time_ms, 1700000000123);
  EXPECT_EQ(rows.flows[1].fields, metasrv::v1::FLOW_FIELD_START_TIME);
  EXPECT_FALSE(rows.flows[2].has(metasrv::v1::FLOW_FIELD_START_TIME));
}

TEST_F(FlownodesTest, MalformedExtensionEndsTheStreamAndLosesNothing) {
  HeartbeatClient good(channel_), bad(channel_);
  ASSERT_TRUE(good.Call(FlowReport(1, {{1, 10, 100}})));
  ASSERT_TRUE(
      bad.Call(WithStartTimes(FlowReport(2, {{2, 20, 200}}), {{2, 7}})));
  meta::HeartbeatRequest broken = FlowReport(2, {{2, 99, 999}});
  (*broken.mutable_extensions())["flow_start_time_map"] = "\xff\xff\xff";
  EXPECT_FALSE(bad.Call(broken).has_value());
  grpc::Status status = bad.Close();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("flow_start_time_map"),
            std::string::npos)
      << status.error_message();
  // Node 2's previous report and node 1's are intact.
  EXPECT_EQ(
      *RangeGet(channel_, "__flow/state"),
      R"({"state_size":{"1":10,"2":20},"last_exec_time_map":{"1":100,"2":200},)"
      R"("start_time_map":{"2":7}})");
  // An unknown extension key is ignored (other extensions may exist).
  meta::HeartbeatRequest other = FlowReport(1, {{1, 11, 101}});
  (*other.mutable_extensions())["something_else"] = "\xff";
  ASSERT_TRUE(good.Call(other));
  EXPECT_EQ(GetFlowState(channel_).flows[0].state_size, 11u);
}

TEST_F(FlownodesTest, ForgetFlowsRemovesThemEverywhere) {
  HeartbeatClient a(channel_), b(channel_);
  ASSERT_TRUE(a.Call(FlowReport(1, {{1, 100, 10}, {2, 200, 20}})));
  ASSERT_TRUE(b.Call(FlowReport(2, {{1, 150, 5}, {3, 300, 30}})));
  metasrv::v1::ForgetFlowsResponse resp;
  ASSERT_TRUE(Forget({1, 42}, &resp).ok());
  EXPECT_EQ(resp.forgotten_flows(), 1u);
  EXPECT_EQ(resp.updated_nodes(), 2u);
  const FlowStateRows rows = GetFlowState(channel_);
  ASSERT_EQ(rows.flows.size(), 2u);
  EXPECT_EQ(rows.flows[0].flow_id, 2u);
  EXPECT_EQ(rows.flows[1].flow_id, 3u);
  EXPECT_EQ(
      *RangeGet(channel_, "__flow/state/node/2"),
      R"({"state_size":{"3":300},"last_exec_time_map":{"3":30},"start_time_map":{}})");
  EXPECT_EQ(List()[0].flow_count(), 1u);
  // Empty: refused, nothing changes.
  grpc::Status empty = Forget({}, &resp);
  EXPECT_EQ(empty.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(GetFlowState(channel_).flows.size(), 2u);
  // A node still running a forgotten flow brings it back with its next report.
  ASSERT_TRUE(b.Call(FlowReport(2, {{1, 150, 6}, {3, 300, 31}})));
  EXPECT_EQ(GetFlowState(channel_).flows.size(), 3u);
}

// A flownode gone for good: ForgetNodes removes its report, record and
// cluster info, so it no longer counts as silent; one that heartbeats again
// is simply new.
TEST_F(FlownodesTest, ForgetNodesRemovesAGoneFlownodeEverywhere) {
  HeartbeatClient a(channel_), b(channel_);
  ASSERT_TRUE(a.Call(WithPeerAndInfo(
      FlowReport(1, {{1, 100, 10}, {2, 200, 20}}), "10.0.0.1:6800", "fn-a")));
  ASSERT_TRUE(b.Call(FlowReport(2, {{1, 50, 20}})));
  const std::string info_key = "__meta_cluster_node_info-0-2-1";
  ASSERT_TRUE(RangeGet(channel_, info_key).has_value());
  auto stub = metasrv::v1::Admin::NewStub(channel_);
  auto forget = [&](const std::vector<uint64_t>& ids,
                    metasrv::v1::ForgetNodesResponse* resp) {
    grpc::ClientContext ctx;
    metasrv::v1::ForgetNodesRequest req;
    for (uint64_t id : ids) req.add_node_ids(id);
    return stub->ForgetNodes(&ctx, req, resp);
  };
  metasrv::v1::ForgetNodesResponse resp;
  ASSERT_TRUE(forget({1, 99}, &resp).ok());
  EXPECT_EQ(resp.forgotten_nodes(), 1u);
  ASSERT_EQ(List().size(), 1u);
  EXPECT_EQ(List()[0].node_id(), 2u);
  EXPECT_FALSE(RangeGet(channel_, "__flow/state/node/1").has_value());
  EXPECT_FALSE(RangeGet(channel_, info_key).has_value());
  const FlowStateRows rows = GetFlowState(channel_);
  ASSERT_EQ(rows.flows.size(), 1u);  // Flow 2 was node 1's alone.
  EXPECT_EQ(rows.flows[0].flow_id, 1u);
  EXPECT_EQ(rows.flows[0].state_size, 50u);  // Node 2's value is the max now.
  // Empty: refused, nothing changes.
  EXPECT_EQ(forget({}, &resp).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(List().size(), 1u);
  // Back again: new.
  ASSERT_TRUE(a.Call(FlowReport(1, {{2, 210, 21}})));
  EXPECT_EQ(List().size(), 2u);
  EXPECT_EQ(GetFlowState(channel_).flows.size(), 2u);
}

TEST_F(FlownodesTest, SilentNodeExpiresAfterTheTtl) {
  HeartbeatClient a(channel_), b(channel_);
  ASSERT_TRUE(a.Call(FlowReport(1, {{1, 100, 10}})));
  ASSERT_TRUE(b.Call(FlowReport(2, {{1, 50, 20}, {2, 5, 5}})));
  clock_.Advance(absl::Seconds(6));
  ASSERT_TRUE(b.Call(Request(meta::FLOWNODE, 2)));  // A heartbeat keeps it.
  clock_.Advance(absl::Seconds(5));  // Node 1 silent for 11 s > TTL 10 s.
  // The expirer runs on its own (every second of real time); wait for it.
  ASSERT_TRUE(WaitFor([&] { return List().size() == 1u; }));
  EXPECT_EQ(List()[0].node_id(), 2u);
  EXPECT_FALSE(RangeGet(channel_, "__flow/state/node/1").has_value());
  const FlowStateRows rows = GetFlowState(channel_);
  ASSERT_EQ(rows.flows.size(), 2u);
  EXPECT_EQ(rows.flows[0].state_size, 50u);  // Node 2's value is the max now.
  EXPECT_EQ(rows.flows[0].last_exec_time_ms, 20);
  // A node that comes back is simply new again.
  ASSERT_TRUE(a.Call(FlowReport(1, {{1, 70, 30}})));
  EXPECT_EQ(GetFlowState(channel_).flows[0].state_size, 70u);
  EXPECT_EQ(List().size(), 2u);
}

class NoTtlTest : public FlownodesTest {
 protected:
  server::ServerOptions Options() override {
    server::ServerOptions options = FlownodesTest::Options();
    options.flow_state.node_report_ttl = absl::ZeroDuration();
    return options;
  }
};

// GreptimeDB's default node_max_idle_time of 24 hours, standalone (no
// election): upstream registers its node expiry only with an election
// (src/meta-srv/src/metasrv.rs), so an idle node's cluster info stays.
TEST_F(NoTtlTest, StandaloneNeverExpiresIdleNodesAsUpstreamWithoutAnElection) {
  HeartbeatClient a(channel_);
  ASSERT_TRUE(a.Call(
      WithPeerAndInfo(FlowReport(1, {{1, 100, 10}}), "10.0.0.1:6800", "fn-a")));
  const std::string key = "__meta_cluster_node_info-0-2-1";
  clock_.Advance(absl::Hours(24 * 365));
  EXPECT_EQ(server_->flow_state().ExpireIdleNodes().cluster_nodes, 0u);
  EXPECT_TRUE(RangeGet(channel_, key).has_value());
  EXPECT_EQ(List().size(), 1u);
}

}  // namespace
}  // namespace metasrv::testing
