// The cluster-info keys and values, byte for byte as GreptimeDB writes them
// (src/common/meta/src/cluster.rs: NodeInfoKey, NodeInfo, NodeStatus;
// serde_json's encoding).
#include "core/cluster_info.h"

#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace metasrv::core {
namespace {

ClusterNode Flownode() {
  ClusterNode node;
  node.role = NodeRole::kFlownode;
  node.node_id = 3;
  node.peer_id = 3;
  node.peer_addr = "10.0.0.3:6800";
  node.info.version = "v0.12.0";
  node.info.git_commit = "abc123";
  node.info.start_time_ms = 1699999999000;
  node.info.total_cpu_millicores = 2000;
  node.info.total_memory_bytes = 4294967296;
  node.info.cpu_usage_millicores = 150;
  node.info.memory_usage_bytes = 104857600;
  node.info.hostname = "flow-3";
  return node;
}

TEST(ClusterInfoTest, KeysAreUpstreamsByRoleNumber) {
  EXPECT_EQ(kClusterInfoPrefix, "__meta_cluster_node_info-0-");
  EXPECT_EQ(ClusterInfoKey(NodeRole::kDatanode, 7),
            "__meta_cluster_node_info-0-0-7");
  EXPECT_EQ(ClusterInfoKey(NodeRole::kFrontend, 6217528761578684316u),
            "__meta_cluster_node_info-0-1-6217528761578684316");
  EXPECT_EQ(ClusterInfoKey(NodeRole::kFlownode, 18446744073709551615u),
            "__meta_cluster_node_info-0-2-18446744073709551615");
}

TEST(ClusterInfoTest, FlownodeValueIsSerdesBytes) {
  EXPECT_EQ(
      EncodeClusterNodeInfo(Flownode(), 1700000000123),
      R"({"peer":{"id":3,"addr":"10.0.0.3:6800"},"last_activity_ts":1700000000123,)"
      R"("status":{"Flownode":{"workloads":{"types":[]}}},"version":"v0.12.0",)"
      R"("git_commit":"abc123","start_time_ms":1699999999000,)"
      R"("total_cpu_millicores":2000,"total_memory_bytes":4294967296,)"
      R"("cpu_usage_millicores":150,"memory_usage_bytes":104857600,)"
      R"("hostname":"flow-3","env_vars":{}})");
}

TEST(ClusterInfoTest, StatusIsTaggedByRole) {
  ClusterNode node = Flownode();
  node.role = NodeRole::kFrontend;
  EXPECT_NE(
      EncodeClusterNodeInfo(node, 1).find(
          R"(,"status":{"Frontend":{"workloads":{"types":[]}}},"version":)"),
      std::string::npos);
  node.role = NodeRole::kDatanode;
  EXPECT_NE(
      EncodeClusterNodeInfo(node, 1).find(
          R"(,"status":{"Datanode":{"rcus":0,"wcus":0,"leader_regions":0,)"
          R"("follower_regions":0,"workloads":{"types":[]}}},"version":)"),
      std::string::npos);
}

TEST(ClusterInfoTest, StringsAreEscapedAsSerdeJsonEscapes) {
  ClusterNode node = Flownode();
  // Quote, backslash, the short escapes, other controls in lowercase hex;
  // DEL and UTF-8 as they are.
  node.info.hostname = "a\"b\\c\n\r\t\b\f\x01\x1f\x7f\xc3\xa9";
  node.peer_addr = "";
  node.info.version = "";
  node.info.git_commit = "";
  node.info.start_time_ms = 0;
  node.info.total_cpu_millicores = -1;
  node.info.total_memory_bytes = 0;
  node.info.cpu_usage_millicores = 0;
  node.info.memory_usage_bytes = 0;
  node.peer_id = 0;
  EXPECT_EQ(
      EncodeClusterNodeInfo(node, -5),
      R"({"peer":{"id":0,"addr":""},"last_activity_ts":-5,)"
      R"("status":{"Flownode":{"workloads":{"types":[]}}},"version":"",)"
      R"("git_commit":"","start_time_ms":0,"total_cpu_millicores":-1,)"
      R"("total_memory_bytes":0,"cpu_usage_millicores":0,)"
      R"("memory_usage_bytes":0,"hostname":"a\"b\\c\n\r\t\b\f\u0001\u001f)"
      "\x7f\xc3\xa9"
      R"(","env_vars":{}})");
}

// A flownode that sends workloads [3, 1] (its node_workloads.flownode) and a
// frontend that sends {"vars":{"POD_NAME":"fe-0"}} in "__env_vars": the
// bytes GreptimeDB main writes (collect_cluster_info_handler.rs).
TEST(ClusterInfoTest, AFlownodesWorkloadsAreWrittenAsSentInOrder) {
  ClusterNode node = Flownode();
  node.workloads = {3, 1};
  EXPECT_EQ(
      EncodeClusterNodeInfo(node, 1700000000123),
      R"({"peer":{"id":3,"addr":"10.0.0.3:6800"},"last_activity_ts":1700000000123,)"
      R"("status":{"Flownode":{"workloads":{"types":[3,1]}}},"version":"v0.12.0",)"
      R"("git_commit":"abc123","start_time_ms":1699999999000,)"
      R"("total_cpu_millicores":2000,"total_memory_bytes":4294967296,)"
      R"("cpu_usage_millicores":150,"memory_usage_bytes":104857600,)"
      R"("hostname":"flow-3","env_vars":{}})");
  node.workloads = {-2, 0, 2147483647};
  EXPECT_NE(
      EncodeClusterNodeInfo(node, 1).find(
          R"("status":{"Flownode":{"workloads":{"types":[-2,0,2147483647]}}},)"),
      std::string::npos);
}

TEST(ClusterInfoTest, AFrontendsEnvironmentVariablesAreItsEnvVars) {
  ClusterNode node = Flownode();
  node.role = NodeRole::kFrontend;
  node.node_id = 6217528761578684316u;
  node.peer_id = 0;
  node.peer_addr = "127.0.0.1:4001";
  node.env_vars = {{"POD_NAME", "fe-0"}};
  node.workloads = {0};
  EXPECT_EQ(
      EncodeClusterNodeInfo(node, 1700000000123),
      R"({"peer":{"id":0,"addr":"127.0.0.1:4001"},"last_activity_ts":1700000000123,)"
      R"("status":{"Frontend":{"workloads":{"types":[0]}}},"version":"v0.12.0",)"
      R"("git_commit":"abc123","start_time_ms":1699999999000,)"
      R"("total_cpu_millicores":2000,"total_memory_bytes":4294967296,)"
      R"("cpu_usage_millicores":150,"memory_usage_bytes":104857600,)"
      R"("hostname":"flow-3","env_vars":{"POD_NAME":"fe-0"}})");
  // Several, each escaped as serde_json escapes a string.
  node.env_vars = {{"A", "1"}, {"Q\"", "x\ny"}};
  EXPECT_NE(EncodeClusterNodeInfo(node, 1).find(
                R"("env_vars":{"A":"1","Q\"":"x\ny"}})"),
            std::string::npos);
}

TEST(ClusterInfoTest, ADatanodesStatusKeepsItsOwnShape) {
  ClusterNode node = Flownode();
  node.role = NodeRole::kDatanode;
  node.workloads = {5};  // Never set for a datanode; not written.
  EXPECT_NE(EncodeClusterNodeInfo(node, 1).find(
                R"("follower_regions":0,"workloads":{"types":[]}}},)"),
            std::string::npos);
}

using Vars = std::vector<std::pair<std::string, std::string>>;

TEST(ParseEnvVarsTest, ReadsWhatUpstreamsSerdeJsonReads) {
  // What a node's EnvVars::into_extensions sends.
  EXPECT_EQ(*ParseEnvVars(R"({"vars":{"POD_NAME":"fe-0"}})"),
            (Vars{{"POD_NAME", "fe-0"}}));
  EXPECT_EQ(*ParseEnvVars(R"({"vars":{}})"), Vars{});
  // Whitespace, unknown members (ignored), escapes, names given twice (the
  // last value, where the name first came).
  EXPECT_EQ(*ParseEnvVars(" {\"x\":[1,{\"y\":null}],\"vars\":{\"A\":\"1\","
                          "\"B\":\"\\u00e9\\n\",\"A\":\"3\"}} \n"),
            (Vars{{"A", "3"}, {"B", "\xc3\xa9\n"}}));
  // serde's sequence form of a struct.
  EXPECT_EQ(*ParseEnvVars(R"([{"K":"V"}])"), (Vars{{"K", "V"}}));
  // An escaped name is the name it spells.
  EXPECT_EQ(*ParseEnvVars(R"({"\u0076ars":{"K":"V"}})"), (Vars{{"K", "V"}}));
}

TEST(ParseEnvVarsTest, RefusesWhatUpstreamsSerdeJsonRefuses) {
  for (const char* bad : {
           "",                                // Nothing.
           "not json",                        // Not JSON.
           R"({"vars":{"A":"1"}} x)",         // Trailing bytes.
           R"({})",                           // No "vars".
           R"({"vars":null})",                // Not an object.
           R"({"vars":{"A":1}})",             // A value not a string.
           R"({"vars":{},"vars":{}})",        // "vars" twice.
           R"([])", R"([{},{}])",             // Sequences of other length.
           R"("vars")", "null", "7",          // Not a struct.
           R"({"vars":{"A":"\ud800"}})",      // A lone surrogate.
           R"({"vars":{"A":"\udc00"}})",      // A lone low surrogate.
           "{\"vars\":{\"A\":\"\xff\"}}",     // Not UTF-8.
           "{\"vars\":{\"A\":\"a\tb\"}}",     // A raw control character.
           R"({"vars":{"A":"1",}})",          // A trailing comma.
       }) {
    absl::StatusOr<Vars> vars = ParseEnvVars(bad);
    EXPECT_EQ(vars.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  // serde_json's recursion limit: 127 levels read, 128 refused.
  const std::string deep127 = "{\"vars\":{},\"x\":" + std::string(126, '[') +
                              std::string(126, ']') + "}";
  EXPECT_TRUE(ParseEnvVars(deep127).ok());
  const std::string deep128 = "{\"vars\":{},\"x\":" + std::string(127, '[') +
                              std::string(127, ']') + "}";
  EXPECT_FALSE(ParseEnvVars(deep128).ok());
}

TEST(ParseEnvVarsTest, ABoundedNumberOfBytesIsRead) {
  const std::string prefix = R"({"vars":{"A":")";
  const std::string suffix = R"("}})";
  std::string at_limit =
      prefix +
      std::string(kMaxEnvVarsBytes - prefix.size() - suffix.size(), 'v') +
      suffix;
  ASSERT_EQ(at_limit.size(), kMaxEnvVarsBytes);
  EXPECT_TRUE(ParseEnvVars(at_limit).ok());
  at_limit.insert(prefix.size(), "v");
  absl::StatusOr<Vars> over = ParseEnvVars(at_limit);
  EXPECT_EQ(over.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(over.status().message().find("more than the limit of 4096"),
            std::string::npos);
}

}  // namespace
}  // namespace metasrv::core
