#include "server/services/heartbeat_handler.h"

#include "core/flow_state_codec.h"
#include "core/flow_state_keys.h"
#include "gtest/gtest.h"
#include "tests/server/test_util.h"

namespace metasrv::server {
namespace {

using ::metasrv::testing::FlowReport;
using ::metasrv::testing::Request;
namespace meta = greptime::v1::meta;

class FlippableLeadership final : public core::Leadership {
 public:
  Term CurrentTerm() const override { return {leader, state_term}; }
  std::string LeaderAddr() const override { return "10.0.0.9:3002"; }
  std::vector<std::string> FollowerAddrs() const override { return {}; }
  bool leader = true;
  std::optional<uint64_t> state_term;
};

class HeartbeatHandlerTest : public ::testing::Test {
 protected:
  std::optional<core::FlowStateValue> NodeValue(uint64_t node) {
    auto json = kv_.Get(core::FlowStateNodeKey(node));
    if (!json.ok()) return std::nullopt;
    return *core::DecodeFlowState(*json);
  }

  // The handler reads requests as the stream does: from their bytes.
  absl::Status Handle(const meta::HeartbeatRequest& req, bool handshake,
                      meta::HeartbeatResponse* resp) {
    EXPECT_TRUE(reader_.Read(req).ok());
    absl::StatusOr<ParsedHeartbeat> parsed =
        reader_.Parse(handler_.max_flows_per_report());
    if (!parsed.ok()) return parsed.status();
    return handler_.Handle(*std::move(parsed), handshake,
                           *AdmitLeader(Method::kHeartbeat, leadership_), resp);
  }
  absl::StatusOr<MergeResult> Merge(const meta::HeartbeatRequest& req,
                                    meta::Role role) {
    EXPECT_TRUE(reader_.Read(req).ok());
    return handler_.MergeFlowStat(reader_.Whole(role, 100000));
  }
  std::optional<uint64_t> NodeId(const meta::HeartbeatRequest& req) {
    EXPECT_TRUE(reader_.Read(req).ok());
    return reader_.node_id();
  }

  HeartbeatRequestReader reader_;
  core::FlowStateManager manager_;
  core::FlowStateManager& kv_ = manager_;  // Its KV, as clients read it.
  FlippableLeadership leadership_;
  HeartbeatHandler handler_{
      &manager_,
      &leadership_,
      {absl::Milliseconds(1500), absl::Milliseconds(2500)}};
};

TEST_F(HeartbeatHandlerTest, HandshakeCarriesConfigLaterResponsesDoNot) {
  meta::HeartbeatResponse resp;
  ASSERT_TRUE(Handle(Request(meta::FLOWNODE, 1), true, &resp).ok());
  EXPECT_EQ(resp.header().protocol_version(), 1u);
  EXPECT_EQ(resp.heartbeat_config().heartbeat_interval_ms(), 1500u);
  EXPECT_EQ(resp.heartbeat_config().retry_interval_ms(), 2500u);
  ASSERT_TRUE(Handle(Request(meta::FLOWNODE, 1), false, &resp).ok());
  EXPECT_FALSE(resp.has_heartbeat_config());
}

TEST_F(HeartbeatHandlerTest, MemberIdZeroIsAValidNode) {
  ASSERT_EQ(*Merge(FlowReport(0, {{1, 10, 20}}), meta::FLOWNODE),
            MergeResult::kMerged);
  ASSERT_TRUE(NodeValue(0).has_value());
  EXPECT_EQ(NodeValue(0)->Find(1)->state_size, 10u);
}

TEST_F(HeartbeatHandlerTest, HeaderMemberIdWinsOverPeerId) {
  meta::HeartbeatRequest req = FlowReport(7, {{1, 10, 20}});
  req.mutable_peer()->set_id(8);
  ASSERT_EQ(*Merge(req, meta::FLOWNODE), MergeResult::kMerged);
  EXPECT_TRUE(NodeValue(7).has_value());
  EXPECT_FALSE(NodeValue(8).has_value());
}

TEST_F(HeartbeatHandlerTest, FallsBackToPeerIdWithoutHeader) {
  meta::HeartbeatRequest req = FlowReport(7, {{1, 10, 20}});
  req.clear_header();
  req.mutable_peer()->set_id(8);
  EXPECT_EQ(NodeId(req), std::optional<uint64_t>(8));
  ASSERT_EQ(*Merge(req, meta::FLOWNODE), MergeResult::kMerged);
  EXPECT_EQ(NodeValue(8)->Find(1)->last_exec_time, 20);
  EXPECT_FALSE(NodeValue(7).has_value());
}

TEST_F(HeartbeatHandlerTest, IgnoresReportWithNeitherHeaderNorPeer) {
  meta::HeartbeatRequest req = FlowReport(7, {{1, 10, 20}});
  req.clear_peer();
  req.clear_header();
  EXPECT_EQ(NodeId(req), std::nullopt);
  EXPECT_EQ(*Merge(req, meta::FLOWNODE), MergeResult::kNoNodeId);
  EXPECT_EQ(kv_.size(), 0u);
}

TEST_F(HeartbeatHandlerTest, DatanodeAndFrontendReportsAreIgnored) {
  for (meta::Role role : {meta::DATANODE, meta::FRONTEND}) {
    meta::HeartbeatRequest req = FlowReport(3, {{1, 10, 20}});
    req.mutable_header()->set_role(role);
    meta::HeartbeatResponse resp;
    ASSERT_TRUE(Handle(req, false, &resp).ok());
    EXPECT_EQ(*Merge(req, role), MergeResult::kNotFlownode);
  }
  EXPECT_EQ(kv_.size(), 0u);
}

TEST_F(HeartbeatHandlerTest, NoFlowStatRecordsTheNodeOnly) {
  EXPECT_EQ(*Merge(Request(meta::FLOWNODE, 3), meta::FLOWNODE),
            MergeResult::kNoFlowStat);
  // Only the flownode's record: no report, no aggregate, and no cluster
  // info without a NodeInfo (as upstream's extract_base_info).
  EXPECT_EQ(kv_.size(), 0u);
  EXPECT_EQ(manager_.ListFlownodes({}).size(), 1u);
  EXPECT_FALSE(kv_.Get(core::FlowStateNodeKey(3)).ok());
  EXPECT_FALSE(kv_.Get(std::string(core::kFlowStateKey)).ok());
}

// Every role's heartbeat with a header, a peer and a NodeInfo writes its
// cluster info as upstream's collect_cluster_info_handler does: a flownode
// and a datanode under the peer's id, a frontend under its address's hash.
TEST_F(HeartbeatHandlerTest, EveryRoleWritesItsClusterInfo) {
  struct Case {
    meta::Role role;
    std::string key;
  };
  const Case cases[] = {
      {meta::FLOWNODE, "__meta_cluster_node_info-0-2-21"},
      {meta::DATANODE, "__meta_cluster_node_info-0-0-21"},
      // Rust's DefaultHasher of "127.0.0.1:4001", computed by rustc.
      {meta::FRONTEND, "__meta_cluster_node_info-0-1-6217528761578684316"},
  };
  for (const Case& c : cases) {
    meta::HeartbeatRequest req = Request(c.role, 5);
    req.mutable_peer()->set_id(21);
    req.mutable_peer()->set_addr("127.0.0.1:4001");
    req.mutable_info()->set_version("v0.13.0");
    req.mutable_info()->set_hostname("host-a");
    meta::HeartbeatResponse resp;
    ASSERT_TRUE(Handle(req, false, &resp).ok());
    absl::StatusOr<std::string> value = kv_.Get(c.key);
    ASSERT_TRUE(value.ok()) << c.key;
    EXPECT_NE(value->find(R"({"peer":{"id":21,"addr":"127.0.0.1:4001"},)"
                          R"("last_activity_ts":)"),
              std::string::npos)
        << *value;
    EXPECT_NE(value->find(R"("version":"v0.13.0",)"), std::string::npos);
  }
  EXPECT_EQ(kv_.size(), 3u);
  // A follower writes nothing.
  leadership_.leader = false;
  meta::HeartbeatRequest req = Request(meta::FRONTEND, 5);
  req.mutable_peer()->set_addr("127.0.0.1:4002");
  req.mutable_info();
  meta::HeartbeatResponse resp;
  EXPECT_TRUE(absl::IsAborted(Handle(req, false, &resp)));
  EXPECT_EQ(kv_.size(), 3u);
}

TEST_F(HeartbeatHandlerTest, EmptyFlowStatIsAnEmptyReport) {
  ASSERT_EQ(*Merge(FlowReport(3, {{1, 10, 20}}), meta::FLOWNODE),
            MergeResult::kMerged);
  meta::HeartbeatRequest empty = Request(meta::FLOWNODE, 3);
  empty.mutable_flow_stat();
  ASSERT_EQ(*Merge(empty, meta::FLOWNODE), MergeResult::kMerged);
  EXPECT_TRUE(NodeValue(3)->empty());
}

TEST_F(HeartbeatHandlerTest, MissingHeaderOrUnknownRoleIsInvalidArgument) {
  meta::HeartbeatResponse resp;
  meta::HeartbeatRequest no_header;
  EXPECT_EQ(Handle(no_header, true, &resp).code(),
            absl::StatusCode::kInvalidArgument);
  meta::HeartbeatRequest bad_role = FlowReport(1, {{1, 1, 1}});
  bad_role.mutable_header()->set_role(static_cast<meta::Role>(7));
  absl::Status s = Handle(bad_role, false, &resp);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("unknown role 7"), std::string::npos);
  EXPECT_EQ(kv_.size(), 0u);
}

TEST_F(HeartbeatHandlerTest, FollowerAnswersNotLeaderAndMergesNothing) {
  leadership_.leader = false;
  meta::HeartbeatResponse resp;
  absl::Status s = Handle(FlowReport(1, {{1, 1, 1}}), true, &resp);
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted);
  EXPECT_EQ(resp.header().error().code(), core::kNotLeaderErrorCode);
  // Upstream's text, naming no leader (clients ask AskLeader for it).
  EXPECT_EQ(resp.header().error().err_msg(), "Current server is not leader");
  EXPECT_EQ(kv_.size(), 0u);
}

TEST_F(HeartbeatHandlerTest, ReportDecidedUnderAnEndedTermIsNotMerged) {
  // The leadership began in term 0; the state was reset since (a step-down).
  leadership_.state_term = manager_.term();
  manager_.Reset();
  meta::HeartbeatResponse resp;
  absl::Status s = Handle(FlowReport(1, {{1, 1, 1}}), false, &resp);
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted);
  EXPECT_EQ(resp.header().error().code(), core::kNotLeaderErrorCode);
  EXPECT_EQ(kv_.size(), 0u);
  // A leadership in the current term merges.
  leadership_.state_term = manager_.term();
  EXPECT_TRUE(Handle(FlowReport(1, {{1, 1, 1}}), false, &resp).ok());
  EXPECT_EQ(kv_.size(), 2u);  // Report, aggregate.
}

TEST_F(HeartbeatHandlerTest, ReportTakesBothMapsAndExtremeIds) {
  meta::HeartbeatRequest req = Request(meta::FLOWNODE, 9);
  meta::FlowStat* stat = req.mutable_flow_stat();
  (*stat->mutable_flow_stat_size())[0] = 5;
  (*stat->mutable_flow_stat_size())[4294967295u] = 6;
  (*stat->mutable_flow_last_exec_time_map())[4294967295u] = -1;
  ASSERT_EQ(*Merge(req, meta::FLOWNODE), MergeResult::kMerged);
  std::optional<core::FlowStateValue> v = NodeValue(9);
  ASSERT_TRUE(v.has_value());
  ASSERT_EQ(v->flows().size(), 2u);
  EXPECT_EQ(v->flows()[0].flow_id, 0u);
  EXPECT_EQ(v->flows()[0].fields, core::kStateSize);
  EXPECT_EQ(v->flows()[1].last_exec_time, -1);
  EXPECT_EQ(v->flows()[1].state_size, 6u);
}

}  // namespace
}  // namespace metasrv::server
