// The cluster-info keys and values, byte for byte as GreptimeDB writes them
// (src/common/meta/src/cluster.rs: NodeInfoKey, NodeInfo, NodeStatus;
// serde_json's encoding).
#include "core/cluster_info.h"

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

}  // namespace
}  // namespace metasrv::core
