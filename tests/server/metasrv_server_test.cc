// The services end to end over gRPC, against an in-process server.
#include "server/metasrv_server.h"

#include "core/flow_state_codec.h"
#include "core/flow_state_keys.h"
#include "gtest/gtest.h"
#include "tests/server/in_process_server.h"
#include "tests/server/test_util.h"

namespace metasrv::server {
namespace {

using ::metasrv::testing::Connect;
using ::metasrv::testing::FlowReport;
using ::metasrv::testing::GetFlowState;
using ::metasrv::testing::HeartbeatClient;
using ::metasrv::testing::RangeGet;
using ::metasrv::testing::Request;
namespace meta = greptime::v1::meta;

class MetasrvServerTest : public ::metasrv::testing::InProcessServerTest {
 protected:
  ServerOptions Options() override {
    ServerOptions options = InProcessServerTest::Options();
    options.heartbeat.heartbeat_interval = absl::Milliseconds(1234);
    return options;
  }

  meta::RangeResponse Range(const std::string& key, const std::string& end,
                            int64_t limit = 0, bool keys_only = false) {
    auto stub = meta::Cluster::NewStub(channel_);
    grpc::ClientContext ctx;
    meta::RangeRequest req;
    req.mutable_header()->set_role(meta::FRONTEND);
    req.set_key(key);
    req.set_range_end(end);
    req.set_limit(limit);
    req.set_keys_only(keys_only);
    meta::RangeResponse resp;
    grpc::Status s = stub->Range(&ctx, req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return resp;
  }

  // Sends one report on a fresh stream (handshake first).
  void Report(
      uint64_t node,
      const std::vector<std::tuple<uint32_t, uint64_t, int64_t>>& flows) {
    HeartbeatClient client(channel_);
    ASSERT_TRUE(client.Call(Request(meta::FLOWNODE, node)).has_value());
    ASSERT_TRUE(client.Call(FlowReport(node, flows)).has_value());
    ASSERT_TRUE(client.Close().ok());
  }
};

TEST_F(MetasrvServerTest, HandshakeReturnsConfiguredInterval) {
  HeartbeatClient client(channel_);
  auto resp = client.Call(Request(meta::FLOWNODE, 1));
  ASSERT_TRUE(resp.has_value());
  EXPECT_EQ(resp->header().protocol_version(), 1u);
  EXPECT_FALSE(resp->header().has_error());
  EXPECT_EQ(resp->heartbeat_config().heartbeat_interval_ms(), 1234u);
  EXPECT_EQ(resp->heartbeat_config().retry_interval_ms(), 3000u);
  EXPECT_TRUE(client.Close().ok());
}

TEST_F(MetasrvServerTest, OneResponsePerRequestInOrder) {
  HeartbeatClient client(channel_);
  ASSERT_TRUE(client.Call(Request(meta::FLOWNODE, 1)).has_value());
  for (int i = 0; i < 50; ++i) {
    auto resp = client.Call(FlowReport(1, {{1, static_cast<uint64_t>(i), i}}));
    ASSERT_TRUE(resp.has_value());
    EXPECT_FALSE(resp->has_heartbeat_config());
    // The response to report i comes after report i was merged.
    EXPECT_EQ(GetFlowState(channel_).flows[0].state_size,
              static_cast<uint64_t>(i));
  }
  EXPECT_TRUE(client.Close().ok());
}

TEST_F(MetasrvServerTest, TwoFlownodesVisibleThroughBothReadPaths) {
  Report(1, {{10, 1024, 100}});
  Report(2, {{20, 2048, 200}, {10, 10, 300}});
  auto state = GetFlowState(channel_);
  ASSERT_TRUE(state.found);
  ASSERT_EQ(state.flows.size(), 2);
  EXPECT_EQ(state.flows[0].flow_id, 10u);
  EXPECT_EQ(state.flows[0].state_size, 1024u);
  EXPECT_EQ(state.flows[0].last_exec_time_ms, 300);
  EXPECT_FALSE(state.flows[0].has(metasrv::v1::FLOW_FIELD_START_TIME));
  EXPECT_EQ(state.flows[1].flow_id, 20u);
  EXPECT_EQ(RangeGet(channel_, "__flow/state"),
            R"({"state_size":{"10":1024,"20":2048},"last_exec_time_map":)"
            R"({"10":300,"20":200},"start_time_map":{}})");
  EXPECT_EQ(
      RangeGet(channel_, "__flow/state/node/1"),
      R"({"state_size":{"10":1024},"last_exec_time_map":{"10":100},"start_time_map":{}})");
  // The filter.
  state = GetFlowState(channel_, {20, 99});
  ASSERT_EQ(state.flows.size(), 1);
  EXPECT_EQ(state.flows[0].state_size, 2048u);
}

TEST_F(MetasrvServerTest, NotFoundBeforeAnyReport) {
  EXPECT_FALSE(GetFlowState(channel_).found);
  EXPECT_EQ(RangeGet(channel_, "__flow/state"), std::nullopt);
}

TEST_F(MetasrvServerTest, DatanodeReportsAreIgnored) {
  HeartbeatClient client(channel_);
  meta::HeartbeatRequest req = FlowReport(5, {{1, 1, 1}});
  req.mutable_header()->set_role(meta::DATANODE);
  ASSERT_TRUE(client.Call(req).has_value());
  ASSERT_TRUE(client.Call(req).has_value());
  EXPECT_TRUE(client.Close().ok());
  EXPECT_FALSE(GetFlowState(channel_).found);
  EXPECT_EQ(server_->flow_state().size(), 0u);
}

TEST_F(MetasrvServerTest, MemberIdZeroIsANode) {
  Report(0, {{3, 30, 3}});
  EXPECT_TRUE(RangeGet(channel_, "__flow/state/node/0").has_value());
  EXPECT_EQ(GetFlowState(channel_).flows[0].state_size, 30u);
}

TEST_F(MetasrvServerTest, LeaderChangeClearsAllStateAndReportsWorkAfter) {
  Report(1, {{10, 1, 1}});
  Report(2, {{20, 2, 2}});
  auto admin = metasrv::v1::Admin::NewStub(channel_);
  grpc::ClientContext ctx;
  metasrv::v1::LeaderChangeResponse resp;
  ASSERT_TRUE(admin->LeaderChange(&ctx, {}, &resp).ok());
  EXPECT_EQ(resp.dropped_keys(), 3u);  // 2 reports, the aggregate.
  EXPECT_FALSE(GetFlowState(channel_).found);
  EXPECT_EQ(Range(std::string(1, '\0'), std::string(1, '\0')).kvs_size(), 0);
  Report(2, {{21, 5, 5}});
  auto state = GetFlowState(channel_);
  ASSERT_TRUE(state.found);
  ASSERT_EQ(state.flows.size(), 1);
  EXPECT_EQ(state.flows[0].flow_id, 21u);
}

TEST_F(MetasrvServerTest, RangeByPrefixWithLimitMoreAndKeysOnly) {
  for (uint64_t node : {1, 2, 3})
    Report(node, {{static_cast<uint32_t>(node), 1, 1}});
  const std::string prefix(core::kFlowStateNodePrefix);
  meta::RangeResponse all = Range(prefix, kv::PrefixEnd(prefix));
  ASSERT_EQ(all.kvs_size(), 3);
  EXPECT_EQ(all.kvs(0).key(), "__flow/state/node/1");
  EXPECT_FALSE(all.more());
  EXPECT_FALSE(all.kvs(2).value().empty());
  meta::RangeResponse cut = Range(prefix, kv::PrefixEnd(prefix), 2, true);
  ASSERT_EQ(cut.kvs_size(), 2);
  EXPECT_TRUE(cut.more());
  EXPECT_EQ(cut.kvs(1).key(), "__flow/state/node/2");
  EXPECT_TRUE(cut.kvs(1).value().empty());
  // "\0" as range_end: every key from the start key on.
  meta::RangeResponse tail = Range("__flow/state/node/2", std::string(1, '\0'));
  ASSERT_EQ(tail.kvs_size(), 2);  // Two reports.
  EXPECT_EQ(tail.kvs(1).key(), "__flow/state/node/3");
  // Whole key space, including the aggregate.
  EXPECT_EQ(Range(std::string(1, '\0'), std::string(1, '\0')).kvs_size(), 4);
}

TEST_F(MetasrvServerTest, BatchGetReturnsOnlyExistingKeys) {
  Report(1, {{10, 1, 1}});
  auto stub = meta::Cluster::NewStub(channel_);
  grpc::ClientContext ctx;
  meta::BatchGetRequest req;
  req.mutable_header()->set_role(meta::FRONTEND);
  req.add_keys("__flow/state/node/9");
  req.add_keys("__flow/state");
  req.add_keys("nope");
  meta::BatchGetResponse resp;
  ASSERT_TRUE(stub->BatchGet(&ctx, req, &resp).ok());
  ASSERT_EQ(resp.kvs_size(), 1);
  EXPECT_EQ(resp.kvs(0).key(), "__flow/state");
  EXPECT_EQ(resp.header().protocol_version(), 1u);
}

TEST_F(MetasrvServerTest, ClusterCallsWithoutHeaderAreServedBadRangesRejected) {
  // GreptimeDB's clients send Range, BatchGet and MetasrvPeers without a
  // header (src/common/meta/src/rpc/store.rs); the reference never looks.
  ASSERT_TRUE(
      server_->flow_state().Merge(7, core::FlowStateValue()).ok());
  const std::string key = core::FlowStateNodeKey(7);
  const std::string value = core::EncodeFlowState(core::FlowStateValue());
  auto stub = meta::Cluster::NewStub(channel_);
  {
    grpc::ClientContext ctx;
    meta::RangeRequest req;
    req.set_key(key);
    meta::RangeResponse resp;
    ASSERT_TRUE(stub->Range(&ctx, req, &resp).ok());
    EXPECT_EQ(resp.header().protocol_version(), 1u);
    EXPECT_FALSE(resp.header().has_error());
    ASSERT_EQ(resp.kvs_size(), 1);
    EXPECT_EQ(resp.kvs(0).value(), value);
  }
  {
    grpc::ClientContext ctx;
    meta::BatchGetRequest req;
    req.add_keys(key);
    meta::BatchGetResponse resp;
    ASSERT_TRUE(stub->BatchGet(&ctx, req, &resp).ok());
    ASSERT_EQ(resp.kvs_size(), 1);
    EXPECT_EQ(resp.kvs(0).value(), value);
  }
  {
    grpc::ClientContext ctx;
    meta::MetasrvPeersResponse resp;
    ASSERT_TRUE(
        stub->MetasrvPeers(&ctx, meta::MetasrvPeersRequest(), &resp).ok());
    EXPECT_EQ(resp.leader().peer().addr(), server_->advertised_addr());
  }
  {
    grpc::ClientContext ctx;
    meta::RangeRequest req;
    req.mutable_header();
    req.set_key(key);
    req.set_limit(-1);
    meta::RangeResponse resp;
    grpc::Status s = stub->Range(&ctx, req, &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(s.error_message().find("limit"), std::string::npos);
  }
}

TEST_F(MetasrvServerTest, AskLeaderAndPeersNameThisNode) {
  auto hb = meta::Heartbeat::NewStub(channel_);
  grpc::ClientContext ctx;
  meta::AskLeaderRequest req;
  req.mutable_header()->set_role(meta::FLOWNODE);
  meta::AskLeaderResponse resp;
  ASSERT_TRUE(hb->AskLeader(&ctx, req, &resp).ok());
  EXPECT_EQ(resp.leader().addr(), server_->advertised_addr());
  EXPECT_EQ(resp.leader().id(), 0u);

  auto cluster = meta::Cluster::NewStub(channel_);
  grpc::ClientContext ctx2;
  meta::MetasrvPeersRequest preq;
  preq.mutable_header();
  meta::MetasrvPeersResponse presp;
  ASSERT_TRUE(cluster->MetasrvPeers(&ctx2, preq, &presp).ok());
  EXPECT_EQ(presp.leader().peer().addr(), server_->advertised_addr());
  const meta::NodeInfo& info = presp.leader().info();
  EXPECT_FALSE(info.version().empty());
  EXPECT_FALSE(info.git_commit().empty());
  EXPECT_GT(info.start_time_ms(), 0u);
  EXPECT_LE(info.start_time_ms(),
            static_cast<uint64_t>(absl::ToUnixMillis(absl::Now())));
  EXPECT_GT(info.total_cpu_millicores(), 0);
  EXPECT_GT(info.total_memory_bytes(), 0);
  EXPECT_GT(info.memory_usage_bytes(), 0);
  // The deprecated fields upstream still fills for older clients
  // (src/meta-srv/src/metasrv.rs), from the same values.
  EXPECT_EQ(info.cpus(), static_cast<uint32_t>(info.total_cpu_millicores()));
  EXPECT_EQ(info.memory_bytes(),
            static_cast<uint64_t>(info.total_memory_bytes()));
  EXPECT_EQ(presp.leader().version(), info.version());
  EXPECT_EQ(presp.leader().git_commit(), info.git_commit());
  EXPECT_EQ(presp.leader().start_time_ms(), info.start_time_ms());
  EXPECT_EQ(presp.leader().cpus(), info.cpus());
  EXPECT_EQ(presp.leader().memory_bytes(), info.memory_bytes());
  EXPECT_EQ(presp.followers_size(), 0);
}

}  // namespace
}  // namespace metasrv::server
