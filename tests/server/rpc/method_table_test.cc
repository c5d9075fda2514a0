// The method table: one row per method, found by its path, and the leader
// half of admission for each policy on a leader and on a follower.
#include "server/rpc/method_table.h"

#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "gtest/gtest.h"
#include "tests/server/rpc/runtime_fixture.h"

namespace metasrv::server {
namespace {

using FakeLeadership = TestLeadership;

TEST(MethodTableTest, EveryRowIsFoundByItsPathAndNamesItsOwnMethod) {
  absl::flat_hash_set<std::string> paths;
  for (int i = 0; i < kMethodCount; ++i) {
    const Method method = static_cast<Method>(i);
    const MethodRow& row = RowOf(method);
    EXPECT_EQ(row.method, method) << row.path;
    EXPECT_TRUE(paths.insert(row.path).second) << "twice: " << row.path;
    EXPECT_EQ(FindMethod(row.path), &row);
    EXPECT_NE(std::string(row.request), "");
  }
  EXPECT_EQ(FindMethod("/greptime.v1.meta.Cluster/Put"), nullptr);
  EXPECT_EQ(FindMethod(""), nullptr);
  // Only the three admin methods need the token.
  int admin = 0;
  for (int i = 0; i < kMethodCount; ++i) {
    admin += RowOf(static_cast<Method>(i)).admin ? 1 : 0;
  }
  EXPECT_EQ(admin, 3);
  EXPECT_TRUE(RowOf(Method::kLeaderChange).admin);
}

// Reflection lists the services the rows name, each once, in their order.
TEST(MethodTableTest, TheServicesAreThoseThePathsName) {
  EXPECT_EQ(
      ServiceNames(),
      (std::vector<std::string>{
          "greptime.v1.meta.Heartbeat", "greptime.v1.meta.Cluster",
          "metasrv.v1.FlowState", "metasrv.v1.Admin", "metasrv.v1.Replica",
          "grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection",
          "grpc.reflection.v1alpha.ServerReflection"}));
}

TEST(MethodTableTest, ALeaderServesEveryMethodUnderItsTerm) {
  FakeLeadership leadership;
  leadership.term = {true, 42};
  for (Method m : {Method::kHeartbeat, Method::kRange, Method::kGetFlowState,
                   Method::kLeaderChange}) {
    absl::StatusOr<Admission> admitted = AdmitLeader(m, leadership);
    ASSERT_TRUE(admitted.ok()) << RowOf(m).name;
    EXPECT_EQ(admitted->kind, Admission::Kind::kServe);
    EXPECT_EQ(admitted->state_term, 42u);
  }
}

TEST(MethodTableTest, AFollowerAnswersRefusesOrServesByPolicy) {
  FakeLeadership leadership;
  leadership.term = {false, std::nullopt};
  leadership.leader = "10.0.0.9:3002";
  // GreptimeDB's methods: the not-leader header.
  for (Method m : {Method::kHeartbeat, Method::kBatchGet, Method::kRange,
                   Method::kMetasrvPeers}) {
    absl::StatusOr<Admission> admitted = AdmitLeader(m, leadership);
    ASSERT_TRUE(admitted.ok());
    EXPECT_EQ(admitted->kind, Admission::Kind::kAnswerNotLeader);
    EXPECT_FALSE(admitted->state_term.has_value());
  }
  // Our own API: refused, naming the leader.
  for (Method m :
       {Method::kGetFlowState, Method::kWatchFlowState, Method::kForgetNodes}) {
    absl::StatusOr<Admission> admitted = AdmitLeader(m, leadership);
    EXPECT_EQ(admitted.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_NE(admitted.status().message().find("10.0.0.9:3002"),
              std::string::npos);
  }
  // How clients find the leader, and ops' methods: served anywhere.
  for (Method m :
       {Method::kAskLeader, Method::kHealthCheck, Method::kReflectionV1}) {
    absl::StatusOr<Admission> admitted = AdmitLeader(m, leadership);
    ASSERT_TRUE(admitted.ok());
    EXPECT_EQ(admitted->kind, Admission::Kind::kServe);
  }
}

}  // namespace
}  // namespace metasrv::server
