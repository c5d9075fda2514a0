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

// Issue 59's log blinding: 2,100 made-up ids kept fresh (a handshake each
// every interval) must not silence the first lines about new flownodes, nor
// any other event's (wrong admin tokens from new hosts).
TEST_F(LogLimitTest, SubjectsKeptFreshNeverSilenceTheFirstLineAboutANewOne) {
  for (int round = 0; round < 4; ++round) {
    for (int id = 0; id < 2100; ++id) {
      Admit("flownode_connected", absl::StrCat("made-up-", id));
    }
    // The first round makes them known (their first lines take that
    // interval's share of first lines); from then on they are kept fresh.
    for (int host = 0; host < 4 && round > 0; ++host) {
      const std::string honest = absl::StrCat("honest-", round, "-", host);
      EXPECT_TRUE(Admit("flownode_connected", honest)) << honest;
      EXPECT_TRUE(Admit("admin_call_refused", honest)) << honest;
    }
    clock_.Advance(absl::Seconds(10));
  }
  // The made-up ids' own lines stay bounded: 100 per interval once known.
  int written = 0;
  for (int id = 0; id < 2100; ++id) {
    written += Admit("flownode_connected", absl::StrCat("made-up-", id));
  }
  EXPECT_EQ(written, kLogLinesPerEvent);
}

// The table of an event is bounded: past kLogSubjects the least recently
// seen subject is forgotten (its next line is a first line again).
TEST_F(LogLimitTest, AFullTableForgetsTheLeastRecentlySeen) {
  SetLogLineInterval(absl::Hours(1));
  for (int i = 0; i < kLogLineBurst; ++i) EXPECT_TRUE(Admit("e", "old"));
  EXPECT_FALSE(Admit("e", "old"));  // Its burst is spent.
  int written = 0;
  for (int i = 0; i < kLogSubjects; ++i) {
    written += Admit("e", absl::StrCat(i)) ? 1 : 0;
  }
  // The event's bound on first lines holds over all of them ("old" took
  // one).
  EXPECT_EQ(written, kLogLinesPerEvent - 1);
  // "old" was the least recently seen: forgotten, it is new again, and
  // its first line waits only for the event's bound on first lines.
  clock_.Advance(absl::Hours(1));
  EXPECT_TRUE(Admit("e", "old"));
  EXPECT_TRUE(Admit("e", "old"));
}

TEST_F(LogLimitTest, AZeroIntervalLimitsNothing) {
  SetLogLineInterval(absl::ZeroDuration());
  for (int i = 0; i < 1000; ++i) EXPECT_TRUE(Admit("e", "same"));
}

}  // namespace
}  // namespace metasrv::server
