// Frontend ids as GreptimeDB computes them (calculate_node_id in
// src/common/meta/src/cluster.rs: Rust's DefaultHasher over the address).
#include "server/codec/node_identity.h"

#include "gtest/gtest.h"

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

}  // namespace
}  // namespace metasrv::server
