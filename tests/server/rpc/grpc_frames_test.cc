#include "server/rpc/grpc_frames.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace metasrv::server {
namespace {

std::string Framed(bool compressed, const std::string& message) {
  std::string out(kMessagePrefixBytes, '\0');
  WriteMessagePrefix(compressed, static_cast<uint32_t>(message.size()),
                     out.data());
  return out + message;
}

TEST(MessageAssemblerTest, MessagesComeWholeHoweverTheBytesAreCut) {
  const std::string wire = Framed(false, "first") + Framed(true, "") +
                           Framed(false, std::string(70000, 'x'));
  for (size_t cut : {1u, 3u, 5u, 7u, 16384u, 100000u}) {
    MessageAssembler assembler(1 << 20);
    std::vector<std::pair<bool, std::string>> got;
    for (size_t at = 0; at < wire.size(); at += cut) {
      ASSERT_TRUE(assembler
                      .Feed(absl::string_view(wire).substr(at, cut),
                            [&](bool compressed, std::string message) {
                              got.emplace_back(compressed, std::move(message));
                            })
                      .ok());
    }
    ASSERT_EQ(got.size(), 3u) << "cut " << cut;
    EXPECT_EQ(got[0], std::make_pair(false, std::string("first")));
    EXPECT_EQ(got[1], std::make_pair(true, std::string()));
    EXPECT_EQ(got[2].second, std::string(70000, 'x'));
    EXPECT_FALSE(assembler.mid_message());
  }
}

TEST(MessageAssemblerTest, RefusesALongMessageAtItsPrefix) {
  MessageAssembler assembler(100);
  int emitted = 0;
  const std::string prefix = Framed(false, std::string(101, 'y')).substr(0, 5);
  absl::Status fed =
      assembler.Feed(prefix, [&](bool, std::string) { ++emitted; });
  EXPECT_EQ(fed.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(emitted, 0);
  EXPECT_LT(assembler.held(), 101u);  // Nothing reserved for it.
}

TEST(MessageAssemblerTest, RefusesAFlagThatIsNeitherZeroNorOne) {
  MessageAssembler assembler(100);
  std::string wire = Framed(false, "a");
  wire[0] = 2;
  EXPECT_EQ(assembler.Feed(wire, [](bool, std::string) {}).code(),
            absl::StatusCode::kInternal);
}

TEST(MessageAssemblerTest, SaysWhenItStopsMidMessage) {
  MessageAssembler assembler(100);
  ASSERT_TRUE(
      assembler.Feed(Framed(false, "abcdef").substr(0, 8), [](bool, std::string) {})
          .ok());
  EXPECT_TRUE(assembler.mid_message());
}

TEST(GrpcTimeoutTest, EveryUnit) {
  EXPECT_EQ(ParseGrpcTimeout("2H"), absl::Hours(2));
  EXPECT_EQ(ParseGrpcTimeout("3M"), absl::Minutes(3));
  EXPECT_EQ(ParseGrpcTimeout("4S"), absl::Seconds(4));
  EXPECT_EQ(ParseGrpcTimeout("99999999m"), absl::Milliseconds(99999999));
  EXPECT_EQ(ParseGrpcTimeout("6u"), absl::Microseconds(6));
  EXPECT_EQ(ParseGrpcTimeout("7n"), absl::Nanoseconds(7));
  EXPECT_EQ(ParseGrpcTimeout("0m"), absl::ZeroDuration());
}

TEST(GrpcTimeoutTest, RefusesWhatIsNotOne) {
  for (const char* bad : {"", "m", "5", "123456789S", "5s", "-5S", "5 S", "1.5S"}) {
    EXPECT_FALSE(ParseGrpcTimeout(bad).has_value()) << bad;
  }
}

TEST(PercentEncodeTest, KeepsPrintableAsciiAndEscapesTheRest) {
  EXPECT_EQ(PercentEncode("plain text: ok!"), "plain text: ok!");
  EXPECT_EQ(PercentEncode("100%"), "100%25");
  EXPECT_EQ(PercentEncode("a\nb"), "a%0Ab");
  EXPECT_EQ(PercentEncode("n\xc3\xb6"), "n%C3%B6");
  EXPECT_EQ(PercentEncode(std::string("\x7f\x00", 2)), "%7F%00");
}

}  // namespace
}  // namespace metasrv::server
