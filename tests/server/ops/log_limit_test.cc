// The log limits on a manual clock: per event and subject, with a bound per
// event over all subjects, and the count of what was left out.
#include "server/ops/log_limit.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace metasrv::server {
namespace {

class LogLimitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SetLogLineClock(&clock_);
    SetLogLineInterval(absl::Seconds(10));
  }
  void TearDown() override { SetLogLineClock(nullptr); }

  bool Admit(const std::string& event, const std::string& subject,
             uint64_t* left_out = nullptr) {
    uint64_t ignored = 0;
    return AdmitLogLine(event, subject, left_out ? left_out : &ignored);
  }

  core::ManualClock clock_;
};

// Issue 38, item 5: eight flownodes reconnecting after a failover are
// eight lines, not one (the limit was one line per place).
TEST_F(LogLimitTest, EachSubjectHasItsOwnLines) {
  for (int node = 1; node <= 8; ++node) {
    EXPECT_TRUE(Admit("flownode_connected", absl::StrCat(node))) << node;
  }
  // Another event about the same nodes is limited apart.
  for (int node = 1; node <= 8; ++node) {
    EXPECT_TRUE(Admit("flownode_disconnected", absl::StrCat(node))) << node;
  }
}

// A second wrong-token attempt within the interval is logged (three lines
// back to back per subject); past that, one per interval, and the line
// after a gap says how many were left out.
TEST_F(LogLimitTest, ASubjectGetsABurstThenOneLinePerInterval) {
  for (int i = 0; i < kLogLineBurst; ++i) {
    EXPECT_TRUE(Admit("admin_call_refused", "10.0.0.5")) << i;
  }
  const uint64_t before = LogLinesSuppressed();
  for (int i = 0; i < 5; ++i)
    EXPECT_FALSE(Admit("admin_call_refused", "10.0.0.5"));
  EXPECT_EQ(LogLinesSuppressed() - before, 5u);
  // Another host is not held back by this one.
  EXPECT_TRUE(Admit("admin_call_refused", "10.0.0.6"));
  clock_.Advance(absl::Seconds(10));
  uint64_t left_out = 0;
  EXPECT_TRUE(Admit("admin_call_refused", "10.0.0.5", &left_out));
  EXPECT_EQ(left_out, 5u);
  EXPECT_FALSE(Admit("admin_call_refused", "10.0.0.5"));
}

// Many subjects at once (10,000 flownodes reconnecting) are bounded per
// event: kLogLinesPerEvent lines per interval, the rest counted.
TEST_F(LogLimitTest, AnEventIsBoundedOverAllItsSubjects) {
  int written = 0;
  for (int node = 0; node < 1000; ++node) {
    written += Admit("flownode_connected", absl::StrCat(node)) ? 1 : 0;
  }
  EXPECT_EQ(written, kLogLinesPerEvent);
  // A subject refused for the event's bound keeps its own lines: after
  // the interval it is written, saying what was left out.
  clock_.Advance(absl::Seconds(10));
  uint64_t left_out = 0;
  EXPECT_TRUE(Admit("flownode_connected", "999", &left_out));
  EXPECT_EQ(left_out, 1u);
  // Other events are not held back meanwhile.
  EXPECT_TRUE(Admit("flownode_refused", "1"));
}

TEST_F(LogLimitTest, TheSubjectsRememberedAreBounded) {
  SetLogLineInterval(absl::Hours(1));
  // kLogSubjects distinct subjects fill the table; none idle yet, so a
  // new one is counted, not remembered.
  int written = 0;
  // (Events of 100 subjects each, so that no event's bound applies.)
  for (int i = 0; i < kLogSubjects + 10; ++i) {
    written += Admit(absl::StrCat("e", i / kLogLinesPerEvent), absl::StrCat(i))
                   ? 1
                   : 0;
  }
  EXPECT_EQ(written, kLogSubjects);
  // Once idle for a burst's worth of intervals, they are forgotten and
  // new subjects are written again.
  clock_.Advance(kLogLineBurst * absl::Hours(1));
  EXPECT_TRUE(Admit("e0", "new"));
}

TEST_F(LogLimitTest, AZeroIntervalLimitsNothing) {
  SetLogLineInterval(absl::ZeroDuration());
  for (int i = 0; i < 1000; ++i) EXPECT_TRUE(Admit("e", "same"));
}

}  // namespace
}  // namespace metasrv::server
