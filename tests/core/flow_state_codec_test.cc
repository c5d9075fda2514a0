#include "core/flow_state_codec.h"

#include <string>

#include "gtest/gtest.h"

namespace metasrv::core {
namespace {

FlowStateValue Sample() {
  return FlowStateValue::Builder()
      .SetStateSize(2, 2048)
      .SetStateSize(1, 1024)
      .SetLastExecTime(2, 200)
      .SetLastExecTime(1, 100)
      .Build();
}

TEST(FlowStateCodecTest, EncodesExactBytes) {
  EXPECT_EQ(EncodeFlowState(Sample()),
            R"({"state_size":{"1":1024,"2":2048},"last_exec_time_map":)"
            R"({"1":100,"2":200},"start_time_map":{}})");
  EXPECT_EQ(EncodeFlowState(FlowStateValue()),
            R"({"state_size":{},"last_exec_time_map":{},"start_time_map":{}})");
}

TEST(FlowStateCodecTest, EncodesIdsNumericallyAndExtremes) {
  FlowStateValue v = FlowStateValue::Builder()
                         .SetStateSize(10, 18446744073709551615ull)
                         .SetStateSize(9, 0)
                         .SetLastExecTime(4294967295u, -9223372036854775807 - 1)
                         .SetStartTime(0, -5)
                         .Build();
  EXPECT_EQ(EncodeFlowState(v),
            R"({"state_size":{"9":0,"10":18446744073709551615},)"
            R"("last_exec_time_map":{"4294967295":-9223372036854775808},)"
            R"("start_time_map":{"0":-5}})");
}

TEST(FlowStateCodecTest, RoundTrips) {
  FlowStateValue v = FlowStateValue::Builder()
                         .SetStateSize(7, 1)
                         .SetLastExecTime(7, 2)
                         .SetStartTime(7, 3)
                         .SetStartTime(8, 4)
                         .Build();
  absl::StatusOr<FlowStateValue> back = DecodeFlowState(EncodeFlowState(v));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, v);
  const FlowStat* f8 = back->Find(8);
  ASSERT_NE(f8, nullptr);
  EXPECT_EQ(f8->fields, kStartTime);
  EXPECT_EQ(f8->start_time, 4);
}

TEST(FlowStateCodecTest, DecodesLegacyValueWithoutStartTimes) {
  absl::StatusOr<FlowStateValue> v = DecodeFlowState(
      R"({"state_size":{"1":1024,"2":2048},"last_exec_time_map":{"1":100,"2":200}})");
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(*v, Sample());
}

TEST(FlowStateCodecTest, AcceptsWhitespaceAndAnyOrder) {
  absl::StatusOr<FlowStateValue> v = DecodeFlowState(
      " {\"last_exec_time_map\" : {\"2\":200, \"1\":100},\n"
      "  \"state_size\":{\"2\":2048,\"1\":1024}, \"start_time_map\":{}} \n");
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(*v, Sample());
}

struct BadCase {
  const char* name;
  std::string json;
  const char* why;  // A part of the expected error message.
  friend void PrintTo(const BadCase& c, std::ostream* os) { *os << c.name; }
};

class FlowStateCodecRejectTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(FlowStateCodecRejectTest, RejectsWithClearError) {
  absl::StatusOr<FlowStateValue> v = DecodeFlowState(GetParam().json);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(v.status().message().find(GetParam().why), absl::string_view::npos)
      << v.status();
}

const std::string kTail = R"(,"last_exec_time_map":{}})";

INSTANTIATE_TEST_SUITE_P(
    Malformed, FlowStateCodecRejectTest,
    ::testing::Values(
        BadCase{"Empty", "", "document is empty"},
        BadCase{"Truncated", R"({"state_size":{"1":10)", "at byte"},
        BadCase{"TruncatedKey", R"({"state_si)", "at byte"},
        BadCase{"NotObject", "[]", "unexpected JSON value"},
        BadCase{"StringValue", R"({"state_size":{"1":"10"})" + kTail,
                "unexpected JSON value"},
        BadCase{"NullValue", R"({"state_size":{"1":null})" + kTail,
                "unexpected JSON value"},
        BadCase{"FloatValue", R"({"state_size":{"1":1.5})" + kTail,
                "not an integer"},
        BadCase{"MapIsArray", R"({"state_size":[1])" + kTail,
                "unexpected JSON value"},
        BadCase{"NegativeSize", R"({"state_size":{"1":-1})" + kTail,
                "negative value in \"state_size\""},
        BadCase{"SizeBeyond64Bits",
                R"({"state_size":{"1":18446744073709551616})" + kTail,
                "not an integer within 64 bits"},
        BadCase{"TimeBeyondInt64",
                R"({"state_size":{},"last_exec_time_map":{"1":9223372036854775808}})",
                "value in \"last_exec_time_map\" beyond int64"},
        BadCase{"TimeBelowInt64",
                R"({"state_size":{},"last_exec_time_map":{"1":-9223372036854775809}})",
                "not an integer within 64 bits"},
        BadCase{"NonNumericId", R"({"state_size":{"x":1})" + kTail,
                "flow id \"x\""},
        BadCase{"NegativeId", R"({"state_size":{"-1":1})" + kTail, "flow id"},
        BadCase{"IdBeyond32Bits", R"({"state_size":{"4294967296":1})" + kTail,
                "flow id \"4294967296\""},
        BadCase{"LeadingZeroId", R"({"state_size":{"01":1})" + kTail, "flow id"},
        BadCase{"EmptyId", R"({"state_size":{"":1})" + kTail, "flow id"},
        BadCase{"RepeatedId", R"({"state_size":{"1":1,"1":2})" + kTail,
                "flow id 1 repeated"},
        BadCase{"RepeatedField",
                R"({"state_size":{},"state_size":{})" + kTail, "repeated field"},
        BadCase{"UnknownField", R"({"state_size":{},"x":{})" + kTail,
                "unknown field \"x\""},
        BadCase{"MissingStateSize", R"({"last_exec_time_map":{}})",
                "missing \"state_size\""},
        BadCase{"MissingLastExec", R"({"state_size":{}})",
                "missing \"last_exec_time_map\""},
        BadCase{"TrailingGarbage", R"({"state_size":{})" + kTail + "x",
                "followed by other values"},
        BadCase{"TrailingObject", R"({"state_size":{})" + kTail + "{}",
                "followed by other values"},
        BadCase{"TrailingNul",
                std::string(R"({"state_size":{})") + kTail + std::string(1, '\0') + "x",
                "trailing bytes"},
        BadCase{"NestedTooDeep", R"({"state_size":{"1":{}})" + kTail,
                "unexpected object"},
        BadCase{"InvalidUtf8", "{\"state_size\":{\"\xff\":1}" + kTail,
                "at byte"}),
    [](const auto& info) { return info.param.name; });

// Every prefix of a valid value is rejected and never read past its end.
TEST(FlowStateCodecTest, EveryTruncationIsRejected) {
  const std::string full = EncodeFlowState(Sample());
  for (size_t n = 0; n < full.size(); ++n) {
    // A copy of exactly n bytes, so ASan would catch a read past it.
    std::string prefix = full.substr(0, n);
    std::unique_ptr<char[]> exact(new char[n == 0 ? 1 : n]);
    std::copy(prefix.begin(), prefix.end(), exact.get());
    EXPECT_FALSE(DecodeFlowState(absl::string_view(exact.get(), n)).ok()) << n;
  }
}

}  // namespace
}  // namespace metasrv::core
