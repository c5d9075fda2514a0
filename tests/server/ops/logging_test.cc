// Log lines: UTC RFC 3339 time with Z, as text or one JSON object per line.
#include "server/ops/logging.h"

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include <cctype>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "spdlog/sinks/ostream_sink.h"
#include "spdlog/spdlog.h"

namespace metasrv::server {
namespace {

// Whether `s` is an RFC 3339 UTC time with milliseconds:
// YYYY-MM-DDTHH:MM:SS.mmmZ.
bool IsUtcTime(const std::string& s) {
  const std::string shape = "dddd-dd-ddTdd:dd:dd.dddZ";
  if (s.size() != shape.size()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const bool ok = shape[i] == 'd'
                        ? std::isdigit(static_cast<unsigned char>(s[i])) != 0
                        : s[i] == shape[i];
    if (!ok) return false;
  }
  return true;
}

class LoggingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    previous_ = spdlog::default_logger();
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out_);
    spdlog::set_default_logger(std::make_shared<spdlog::logger>("test", sink));
  }
  void TearDown() override {
    ASSERT_TRUE(ConfigureLogging("info", "text").ok());
    spdlog::set_default_logger(previous_);
  }
  std::ostringstream out_;
  std::shared_ptr<spdlog::logger> previous_;
};

TEST_F(LoggingTest, TextLinesCarryUtcTime) {
  ASSERT_TRUE(ConfigureLogging("info", "text").ok());
  spdlog::info("serving on {}", "127.0.0.1:3002");
  spdlog::debug("not shown at info");
  const std::string line = out_.str();
  const size_t space = line.find(' ');
  ASSERT_NE(space, std::string::npos) << line;
  EXPECT_TRUE(IsUtcTime(line.substr(0, space))) << line;
  EXPECT_EQ(line.substr(space), " info serving on 127.0.0.1:3002\n");
}

TEST_F(LoggingTest, JsonIsOneObjectPerLineWithEscaping) {
  ASSERT_TRUE(ConfigureLogging("debug", "json").ok());
  spdlog::warn("peer \"a\\b\"\nsaid \x01 héllo");
  spdlog::debug("second");
  std::istringstream lines(out_.str());
  std::string first, second, extra;
  ASSERT_TRUE(std::getline(lines, first));
  ASSERT_TRUE(std::getline(lines, second));
  EXPECT_FALSE(std::getline(lines, extra));
  google::protobuf::Value v;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(first, &v).ok())
      << first;
  const auto& f = v.struct_value().fields();
  EXPECT_EQ(f.at("level").string_value(), "warning");
  EXPECT_EQ(f.at("msg").string_value(), "peer \"a\\b\"\nsaid \x01 héllo");
  EXPECT_TRUE(IsUtcTime(f.at("time").string_value()))
      << f.at("time").string_value();
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(second, &v).ok())
      << second;
}

// LogFields: JSON lines carry them as fields of their own while they are in
// scope, escaped; scopes nest.
TEST_F(LoggingTest, JsonLinesCarryTheScopesFields) {
  ASSERT_TRUE(ConfigureLogging("info", "json").ok());
  {
    const LogFields node({{"node_id", "7"}, {"peer", "ipv4:\"x\""}});
    {
      const LogFields term({{"state_generation", "3"}});
      spdlog::info("inner");
    }
    spdlog::info("outer");
  }
  spdlog::info("none");
  std::istringstream lines(out_.str());
  std::vector<google::protobuf::Value> values;
  for (std::string line; std::getline(lines, line);) {
    google::protobuf::Value v;
    ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(line, &v).ok())
        << line;
    values.push_back(v);
  }
  ASSERT_EQ(values.size(), 3u);
  const auto& inner = values[0].struct_value().fields();
  EXPECT_EQ(inner.at("node_id").string_value(), "7");
  EXPECT_EQ(inner.at("peer").string_value(), "ipv4:\"x\"");
  EXPECT_EQ(inner.at("state_generation").string_value(), "3");
  const auto& outer = values[1].struct_value().fields();
  EXPECT_EQ(outer.at("node_id").string_value(), "7");
  EXPECT_EQ(outer.count("state_generation"), 0u);
  EXPECT_EQ(values[2].struct_value().fields().count("node_id"), 0u);
}

TEST_F(LoggingTest, UnknownLevelOrFormatChangesNothing) {
  EXPECT_EQ(ConfigureLogging("loud", "text").code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ConfigureLogging("info", "xml").code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace metasrv::server
