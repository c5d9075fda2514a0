#include "core/flownode_record.h"

#include <string>

#include "gtest/gtest.h"

namespace metasrv::core {
namespace {

NodeInfo SampleInfo() {
  NodeInfo info;
  info.version = "0.12.0";
  info.git_commit = "abc123";
  info.start_time_ms = 1700000000000;
  info.hostname = "flow-\"1\"\\n\xc3\xa9";  // Quotes, backslash, UTF-8.
  info.total_cpu_millicores = 4000;
  info.total_memory_bytes = int64_t{16} << 30;
  info.cpu_usage_millicores = 1250;
  info.memory_usage_bytes = -1;  // Negative values survive too.
  return info;
}

TEST(FlownodeRecordTest, EncodesCompactJsonWithoutInfoWhenAbsent) {
  FlownodeRecord record;
  record.peer_addr = "10.0.0.7:6800";
  record.last_heartbeat_ms = 1700000003000;
  record.last_report_ms = 0;
  EXPECT_EQ(EncodeFlownodeRecord(record),
            R"({"peer_addr":"10.0.0.7:6800","last_heartbeat_ms":1700000003000,)"
            R"("last_report_ms":0})");
}

TEST(FlownodeRecordTest, RoundTripsWithInfoAndEscapes) {
  FlownodeRecord record;
  record.peer_addr = "[::1]:6800";
  record.last_heartbeat_ms = 5;
  record.last_report_ms = 4;
  record.info = SampleInfo();
  const std::string json = EncodeFlownodeRecord(record);
  EXPECT_NE(json.find(R"("hostname":"flow-\"1\"\\n)"), std::string::npos) << json;
  absl::StatusOr<FlownodeRecord> decoded = DecodeFlownodeRecord(json);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(*decoded, record);
}

TEST(FlownodeRecordTest, EscapesEveryControlByteAndKeepsOthers) {
  FlownodeRecord record;
  record.peer_addr = std::string("a\0b\x01\x1f\b\f\n\r\t\"\\/\x7f\xc3\xa9", 16);
  record.info = NodeInfo();
  record.info->hostname = "h";
  record.info->start_time_ms = 18446744073709551615u;
  record.info->cpu_usage_millicores = -1;
  const std::string json = EncodeFlownodeRecord(record);
  const std::string want =
      R"({"peer_addr":"a\u0000b\u0001\u001F\b\f\n\r\t\"\\/)"
      "\x7f\xc3\xa9\",";
  EXPECT_EQ(json.substr(0, want.size()), want);
  EXPECT_NE(json.find(R"("start_time_ms":18446744073709551615,)"),
            std::string::npos);
  EXPECT_NE(json.find(R"("cpu_usage_millicores":-1,)"), std::string::npos);
  absl::StatusOr<FlownodeRecord> back = DecodeFlownodeRecord(json);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, record);
}

TEST(FlownodeRecordTest, SkipsUnknownMembers) {
  absl::StatusOr<FlownodeRecord> decoded = DecodeFlownodeRecord(
      R"({"peer_addr":"a:1","zone":"eu","last_heartbeat_ms":2,"last_report_ms":1})");
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->peer_addr, "a:1");
  EXPECT_EQ(decoded->last_heartbeat_ms, 2);
  EXPECT_FALSE(decoded->info.has_value());
}

TEST(FlownodeRecordTest, RejectsMalformedWithClearErrors) {
  struct Case {
    const char* json;
    const char* message;
  };
  for (const Case& c : std::initializer_list<Case>{
           {"", "flownode record: "},
           {"[1]", "not a JSON object"},
           {R"({"peer_addr":"a","last_heartbeat_ms":1})", "\"last_report_ms\""},
           {R"({"peer_addr":7,"last_heartbeat_ms":1,"last_report_ms":1})",
            "\"peer_addr\" must be a string"},
           {R"({"peer_addr":"a","last_heartbeat_ms":1.5,"last_report_ms":1})",
            "\"last_heartbeat_ms\" must be an int64"},
           {R"({"peer_addr":"a","last_heartbeat_ms":1,"last_report_ms":1,"info":3})",
            "\"info\" must be an object"},
           {R"({"peer_addr":"a","last_heartbeat_ms":1,"last_report_ms":1,"info":{}})",
            "\"version\""},
           {"{\"peer_addr\":\"\xff\",\"last_heartbeat_ms\":1,\"last_report_ms\":1}",
            "flownode record: "},
       }) {
    absl::StatusOr<FlownodeRecord> decoded = DecodeFlownodeRecord(c.json);
    ASSERT_FALSE(decoded.ok()) << c.json;
    EXPECT_EQ(decoded.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(decoded.status().message().find(c.message), absl::string_view::npos)
        << decoded.status() << " for " << c.json;
  }
}

TEST(FlownodeRecordTest, EveryTruncationIsRejected) {
  FlownodeRecord record;
  record.peer_addr = "h:1";
  record.info = SampleInfo();
  const std::string json = EncodeFlownodeRecord(record);
  for (size_t n = 0; n < json.size(); ++n) {
    std::string prefix = json.substr(0, n);
    EXPECT_FALSE(DecodeFlownodeRecord(prefix).ok()) << prefix;
  }
}

}  // namespace
}  // namespace metasrv::core
