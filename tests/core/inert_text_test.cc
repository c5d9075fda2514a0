// Text from the network made inert: C0, DEL, C1 and broken UTF-8 escaped,
// well-formed UTF-8 kept, for a terminal and as JSON string content.
#include "core/inert_text.h"

#include <string>

#include "gtest/gtest.h"

namespace metasrv::core {
namespace {

TEST(InertTextTest, ControlsAndBrokenUtf8AreEscapedTheRestKept) {
  EXPECT_EQ(Inert("plain host-1:4001"), "plain host-1:4001");
  EXPECT_EQ(Inert("a\nb\r\tc"), "a\\x0ab\\x0d\\x09c");
  EXPECT_EQ(Inert("\x1b]0;title\x07"), "\\x1b]0;title\\x07");
  EXPECT_EQ(Inert("del\x7f"), "del\\x7f");
  // C1 controls as UTF-8 (U+009B is a CSI to some terminals).
  EXPECT_EQ(Inert("\xc2\x9b"
                  "31m\xc2\x85"),
            "\\u009b31m\\u0085");
  // Well-formed UTF-8 stays: U+00A0 (just past C1), an accent, an emoji.
  EXPECT_EQ(Inert("\xc2\xa0\xc3\xa9\xf0\x9f\x98\x80"),
            "\xc2\xa0\xc3\xa9\xf0\x9f\x98\x80");
  // Broken: a lone continuation byte, a cut sequence, an overlong '/'.
  EXPECT_EQ(Inert("\x80"), "\\x80");
  EXPECT_EQ(Inert("x\xe2\x82"), "x\\xe2\\x82");
  EXPECT_EQ(Inert("\xc0\xaf"), "\\xc0\\xaf");
  EXPECT_TRUE(IsValidUtf8("\xc3\xa9"));
  EXPECT_FALSE(IsValidUtf8("\xed\xa0\x80"));  // A surrogate.
}

TEST(InertTextTest, JsonContentEscapesQuotesAndEveryControl) {
  std::string out;
  AppendInert("\"q\\\n\x01\xc2\x9b\xff", /*json=*/true, &out);
  EXPECT_EQ(out, "\\\"q\\\\\\n\\u0001\\u009b\\u00ff");
}

}  // namespace
}  // namespace metasrv::core
