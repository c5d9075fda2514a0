// Frontend ids as GreptimeDB computes them (calculate_node_id in
// src/common/meta/src/cluster.rs: Rust's DefaultHasher over the address).
#include "server/codec/node_identity.h"

#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "server/codec/node_info_proto.h"
#include "tests/server/test_util.h"

namespace metasrv::server {
namespace {

TEST(NodeIdentityTest, FrontendIdIsRustsDefaultHasherOfTheAddress) {
  // Each printed by a Rust program: DefaultHasher::new(), addr.hash(&mut h),
  // h.finish() (rustc 1.95).
  EXPECT_EQ(FrontendNodeId(""), 3476900567878811119u);
  EXPECT_EQ(FrontendNodeId("127.0.0.1:4001"), 6217528761578684316u);
  EXPECT_EQ(FrontendNodeId("10.0.0.7:4001"), 3049992578488648830u);
  EXPECT_EQ(FrontendNodeId("frontend-0.frontend.greptimedb:4001"),
            15299236601250540219u);
  EXPECT_EQ(FrontendNodeId("[::1]:4001"), 17323834646821221719u);
}

TEST(NodeIdentityTest, ClusterNodeNeedsHeaderPeerAndInfo) {
  greptime::v1::meta::HeartbeatRequest req;
  req.mutable_header()->set_role(greptime::v1::meta::FLOWNODE);
  req.mutable_peer()->set_id(4);
  EXPECT_FALSE(ClusterNodeOf(req).has_value());  // No NodeInfo.
  req.mutable_info()->set_git_commit("abc");
  std::optional<core::ClusterNode> node = ClusterNodeOf(req);
  ASSERT_TRUE(node.has_value());
  EXPECT_EQ(node->role, core::NodeRole::kFlownode);
  EXPECT_EQ(node->node_id, 4u);
  EXPECT_EQ(node->info.git_commit, "abc");
  req.clear_header();
  EXPECT_FALSE(ClusterNodeOf(req).has_value());
}

TEST(NodeIdentityTest, WorkloadsAreTheNodesOwnRolesAsSent) {
  greptime::v1::meta::HeartbeatRequest req;
  req.mutable_header()->set_role(greptime::v1::meta::FLOWNODE);
  req.mutable_peer()->set_id(4);
  req.mutable_info();
  EXPECT_TRUE(ClusterNodeOf(req)->workloads.empty());  // None sent.
  req.mutable_flownode()->add_types(3);
  req.mutable_flownode()->add_types(1);
  EXPECT_EQ(ClusterNodeOf(req)->workloads, (std::vector<int32_t>{3, 1}));
  // Another role's: none (get_flownode_workloads).
  req.mutable_frontend()->add_types(2);
  EXPECT_TRUE(ClusterNodeOf(req)->workloads.empty());
  req.mutable_header()->set_role(greptime::v1::meta::FRONTEND);
  EXPECT_EQ(ClusterNodeOf(req)->workloads, (std::vector<int32_t>{2}));
  // A datanode's status is written without them.
  req.mutable_header()->set_role(greptime::v1::meta::DATANODE);
  req.mutable_datanode()->add_types(0);
  EXPECT_TRUE(ClusterNodeOf(req)->workloads.empty());
}

TEST(NodeIdentityTest, EnvVarsComeFromTheExtensionForEveryRole) {
  greptime::v1::meta::HeartbeatRequest req;
  req.mutable_peer()->set_id(4);
  req.mutable_peer()->set_addr("10.0.0.4:4001");
  req.mutable_info();
  (*req.mutable_extensions())["__env_vars"] = R"({"vars":{"POD_NAME":"fe-0"}})";
  using Vars = std::vector<std::pair<std::string, std::string>>;
  for (auto role : {greptime::v1::meta::DATANODE, greptime::v1::meta::FRONTEND,
                    greptime::v1::meta::FLOWNODE}) {
    req.mutable_header()->set_role(role);
    EXPECT_EQ(ClusterNodeOf(req)->env_vars, (Vars{{"POD_NAME", "fe-0"}}));
  }
  // Bytes that are not EnvVars: none, the node still described, a warning.
  testing::CapturedLog log;
  (*req.mutable_extensions())["__env_vars"] = "POD_NAME=fe-0";
  req.mutable_info()->set_version("v1");
  std::optional<core::ClusterNode> node = ClusterNodeOf(req);
  ASSERT_TRUE(node.has_value());
  EXPECT_TRUE(node->env_vars.empty());
  EXPECT_EQ(node->info.version, "v1");
  const std::string text = log.Restore();
  EXPECT_NE(text.find("node 4 (10.0.0.4:4001): its environment variables are "
                      "read as none: \"__env_vars\" is not EnvVars"),
            std::string::npos)
      << text;
}


// FromProto and ToProto copy every field of core's one list, each to the
// protobuf field of its name, both ways.
TEST(NodeInfoProtoTest, EveryFieldOfTheListIsCopiedBothWays) {
  greptime::v1::meta::NodeInfo proto;
  const google::protobuf::Reflection* reflection = proto.GetReflection();
  core::NodeInfo want;
  int fields = 0;
  core::ForEachNodeInfoField(
      [&](const char* name, auto& field) {
        const google::protobuf::FieldDescriptor* descriptor =
            proto.GetDescriptor()->FindFieldByName(name);
        ASSERT_NE(descriptor, nullptr) << name;
        ++fields;
        using T = std::decay_t<decltype(field)>;
        if constexpr (std::is_same_v<T, std::string>) {
          field = absl::StrCat("text-", fields);
          reflection->SetString(&proto, descriptor, field);
        } else if constexpr (std::is_same_v<T, int64_t>) {
          field = -1000 * fields;
          reflection->SetInt64(&proto, descriptor, field);
        } else {
          static_assert(std::is_same_v<T, uint64_t>);
          field = 1000 * fields;
          reflection->SetUInt64(&proto, descriptor, field);
        }
      },
      want);
  EXPECT_EQ(fields, 8);
  EXPECT_EQ(FromProto(proto), want);
  greptime::v1::meta::NodeInfo back;
  ToProto(want, &back);
  EXPECT_EQ(back.SerializeAsString(), proto.SerializeAsString());
}

}  // namespace
}  // namespace metasrv::server
