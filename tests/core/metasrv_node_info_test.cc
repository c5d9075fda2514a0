// MetasrvNodeInfo as upstream's candidates register it (src/meta-srv/src/
// metasrv.rs: serde of MetasrvNodeInfo, the resources #[serde(default)]).
#include "core/metasrv_node_info.h"

#include "gtest/gtest.h"

namespace metasrv::core {
namespace {

TEST(MetasrvNodeInfoTest, EncodesInUpstreamsOrderAndRoundTrips) {
  MetasrvNodeInfo node;
  node.addr = "10.0.0.1:3002";
  node.info.version = "0.1.0";
  node.info.git_commit = "abc";
  node.info.start_time_ms = 1700000000000;
  node.info.total_cpu_millicores = 2000;
  node.info.total_memory_bytes = 1 << 30;
  node.info.cpu_usage_millicores = 12;
  node.info.memory_usage_bytes = 1 << 20;
  node.info.hostname = "m\"1";
  const std::string json = EncodeMetasrvNodeInfo(node);
  EXPECT_EQ(json,
            R"({"addr":"10.0.0.1:3002","version":"0.1.0","git_commit":"abc",)"
            R"("start_time_ms":1700000000000,"total_cpu_millicores":2000,)"
            R"("total_memory_bytes":1073741824,"cpu_usage_millicores":12,)"
            R"("memory_usage_bytes":1048576,"hostname":"m\"1"})");
  absl::StatusOr<MetasrvNodeInfo> back = DecodeMetasrvNodeInfo(json);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, node);
}

TEST(MetasrvNodeInfoTest, DefaultsAPlainAddressAndRejectsGarbage) {
  // Resources default as upstream's #[serde(default)] does.
  absl::StatusOr<MetasrvNodeInfo> old = DecodeMetasrvNodeInfo(
      R"({"addr":"a:1","version":"v","git_commit":"c","start_time_ms":5,"x":1})");
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_EQ(old->info.start_time_ms, 5u);
  EXPECT_EQ(old->info.total_cpu_millicores, 0);
  // An older replica's value: its address alone.
  absl::StatusOr<MetasrvNodeInfo> plain = DecodeMetasrvNodeInfo("b:2");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->addr, "b:2");
  EXPECT_FALSE(DecodeMetasrvNodeInfo(R"({"addr":1})").ok());
  EXPECT_FALSE(DecodeMetasrvNodeInfo(R"({"version":"v"})").ok());
  EXPECT_FALSE(DecodeMetasrvNodeInfo(R"({"addr":"a",)").ok());
}

}  // namespace
}  // namespace metasrv::core
