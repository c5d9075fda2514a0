// Bad input over the wire: each case pins down the answer, and that nothing
// else is lost.
#include <limits>

#include "core/flow_state_keys.h"
#include "gtest/gtest.h"
#include "server/services/heartbeat_handler.h"
#include "tests/server/in_process_server.h"
#include "tests/server/test_util.h"

namespace metasrv::server {
namespace {

using ::metasrv::testing::FlowReport;
using ::metasrv::testing::GetFlowState;
using ::metasrv::testing::HeartbeatClient;
using ::metasrv::testing::RangeGet;
using ::metasrv::testing::Request;
namespace meta = greptime::v1::meta;

class BadInputTest : public ::metasrv::testing::InProcessServerTest {
 protected:
  // Sends `req` on a fresh stream; returns the final status and whether the
  // request was answered without error.
  grpc::Status Send(const meta::HeartbeatRequest& req,
                    bool* answered = nullptr) {
    HeartbeatClient client(channel_);
    auto resp = client.Call(req);
    if (answered != nullptr)
      *answered = resp.has_value() && !resp->header().has_error();
    return client.Close();
  }
};

TEST_F(BadInputTest, EveryFieldOutOfRange) {
  constexpr uint64_t kMax64 = std::numeric_limits<uint64_t>::max();
  meta::HeartbeatRequest req =
      FlowReport(kMax64, {{1, kMax64, std::numeric_limits<int64_t>::max()}});
  req.mutable_header()->set_protocol_version(kMax64);
  (*req.mutable_header()->mutable_tracing_context())[std::string(1000, 'k')] =
      "v";
  req.mutable_peer()->set_id(kMax64);
  // At the bound of what a node may say about itself (a longer one is
  // refused: hardening_test).
  req.mutable_peer()->set_addr(std::string(server::kMaxNodeStringBytes, '\0'));
  req.mutable_report_interval()->set_start_timestamp_millis(
      std::numeric_limits<int64_t>::min());
  req.mutable_report_interval()->set_end_timestamp_millis(-1);
  req.set_duration_since_epoch(kMax64);
  req.set_node_epoch(kMax64);
  req.mutable_info()->set_start_time_ms(kMax64);
  req.mutable_info()->set_total_cpu_millicores(
      std::numeric_limits<int64_t>::min());
  req.mutable_info()->set_memory_usage_bytes(-1);
  (*req.mutable_extensions())["junk"] = std::string(100, '\xfe');
  bool answered = false;
  // Everything but the role is accepted as it is: the report is merged under
  // the largest node id, with the largest values.
  EXPECT_TRUE(Send(req, &answered).ok());
  EXPECT_TRUE(answered);
  EXPECT_EQ(RangeGet(channel_, core::FlowStateNodeKey(kMax64)),
            R"({"state_size":{"1":18446744073709551615},"last_exec_time_map":)"
            R"({"1":9223372036854775807},"start_time_map":{}})");
  // A role out of range is refused, and changes nothing.
  req.mutable_header()->set_role(
      static_cast<meta::Role>(std::numeric_limits<int32_t>::max()));
  req.mutable_flow_stat()->Clear();
  EXPECT_EQ(Send(req).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  req.mutable_header()->set_role(static_cast<meta::Role>(-1));
  EXPECT_EQ(Send(req).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(GetFlowState(channel_).flows.size(), 1u);
}

// A string field that is not UTF-8 makes the whole request unparsable
// (proto3): the stream ends with INVALID_ARGUMENT, and nothing is merged.
TEST_F(BadInputTest, InvalidUtf8StringIsRefused) {
  ASSERT_TRUE(Send(FlowReport(1, {{1, 1, 1}})).ok());
  meta::HeartbeatRequest req = FlowReport(1, {{2, 2, 2}});
  req.mutable_peer()->set_addr("\xff\xfe");
  bool answered = true;
  const grpc::Status s = Send(req, &answered);
  EXPECT_FALSE(answered);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
      << s.error_message();
  EXPECT_NE(s.error_message().find("malformed HeartbeatRequest"),
            std::string::npos);
  auto state = GetFlowState(channel_);
  ASSERT_EQ(state.flows.size(), 1u);
  EXPECT_EQ(state.flows[0].flow_id, 1u);
}

TEST_F(BadInputTest, ZeroFlowsReportEmptiesOnlyThatNode) {
  ASSERT_TRUE(Send(FlowReport(1, {{1, 1, 1}})).ok());
  ASSERT_TRUE(Send(FlowReport(2, {{2, 2, 2}})).ok());
  meta::HeartbeatRequest empty = Request(meta::FLOWNODE, 1);
  empty.mutable_flow_stat();
  ASSERT_TRUE(Send(empty).ok());
  auto state = GetFlowState(channel_);
  ASSERT_EQ(state.flows.size(), 1u);
  EXPECT_EQ(state.flows[0].flow_id, 2u);
  EXPECT_EQ(RangeGet(channel_, core::FlowStateNodeKey(1)),
            R"({"state_size":{},"last_exec_time_map":{},"start_time_map":{}})");
}

TEST_F(BadInputTest, MillionFlowReportIsTooLargeAndLosesNothing) {
  ASSERT_TRUE(Send(FlowReport(1, {{1, 100, 1}})).ok());
  std::vector<std::tuple<uint32_t, uint64_t, int64_t>> million;
  million.reserve(1000000);
  for (uint32_t f = 0; f < 1000000; ++f) million.push_back({f, 1, 1});
  // About 10 MB: over the default 4 MiB message limit.
  const grpc::Status s = Send(FlowReport(1, million));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  auto state = GetFlowState(channel_);
  ASSERT_EQ(state.flows.size(), 1u);
  EXPECT_EQ(state.flows[0].state_size, 100u);
}

TEST_F(BadInputTest, ExtremeFlowIdsAndNegativeTimes) {
  ASSERT_TRUE(
      Send(FlowReport(1, {{0, 5, -1733000000000}, {4294967295u, 6, -1}})).ok());
  ASSERT_TRUE(Send(FlowReport(2, {{0, 1, -2}})).ok());
  auto state = GetFlowState(channel_);
  ASSERT_EQ(state.flows.size(), 2u);
  EXPECT_EQ(state.flows[0].flow_id, 0u);
  EXPECT_EQ(state.flows[0].state_size, 5u);
  EXPECT_EQ(state.flows[0].last_exec_time_ms, -2);  // max(-1733000000000, -2)
  EXPECT_EQ(state.flows[1].flow_id, 4294967295u);
  EXPECT_EQ(RangeGet(channel_, "__flow/state"),
            R"({"state_size":{"0":5,"4294967295":6},"last_exec_time_map":)"
            R"({"0":-2,"4294967295":-1},"start_time_map":{}})");
}

TEST_F(BadInputTest, DatanodeWithFlowStatIsIgnored) {
  meta::HeartbeatRequest req = FlowReport(3, {{1, 1, 1}});
  req.mutable_header()->set_role(meta::DATANODE);
  bool answered = false;
  EXPECT_TRUE(Send(req, &answered).ok());
  EXPECT_TRUE(answered);
  EXPECT_FALSE(GetFlowState(channel_).found);
  EXPECT_EQ(server_->flow_state().size(), 0u);
}

// Map entries repeated in the protobuf encoding: the last one wins, as the
// protobuf spec says. Bytes are crafted by hand, checked against protobuf's
// own parse, and read by the server's reader as they come off the wire.
TEST(DuplicateMapKeysTest, LastEntryWins) {
  core::FlowStateManager manager;
  core::StandaloneLeadership leadership("127.0.0.1:3002");
  HeartbeatHandler handler(&manager, &leadership, {});
  meta::HeartbeatRequest base = Request(meta::FLOWNODE, 4);
  std::string bytes = base.SerializeAsString();
  // flow_stat (field 9) holding two entries for flow 1 in flow_stat_size
  // (field 1): {1: 10}, then {1: 20}; and in the time map {1: 7}, {1: 3}.
  const std::string stat = std::string("\x0a\x04\x08\x01\x10\x0a", 6) +
                           std::string("\x0a\x04\x08\x01\x10\x14", 6) +
                           std::string("\x12\x04\x08\x01\x10\x07", 6) +
                           std::string("\x12\x04\x08\x01\x10\x03", 6);
  bytes += std::string("\x4a", 1) + static_cast<char>(stat.size()) + stat;
  meta::HeartbeatRequest parsed;
  ASSERT_TRUE(parsed.ParseFromString(bytes));
  EXPECT_EQ(parsed.flow_stat().flow_stat_size().at(1), 20u);
  HeartbeatRequestReader reader;
  ASSERT_TRUE(reader.Read(bytes).ok());
  meta::HeartbeatResponse resp;
  absl::StatusOr<ParsedHeartbeat> whole =
      reader.Parse(handler.max_flows_per_report());
  ASSERT_TRUE(whole.ok());
  ASSERT_TRUE(handler
                  .Handle(*std::move(whole), true,
                          *AdmitLeader(Method::kHeartbeat, leadership), &resp)
                  .ok());
  EXPECT_EQ(
      *manager.Get(core::FlowStateNodeKey(4)),
      R"({"state_size":{"1":20},"last_exec_time_map":{"1":3},"start_time_map":{}})");
}

}  // namespace
}  // namespace metasrv::server
