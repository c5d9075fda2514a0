// Wrong admin tokens answered late, per host and in all, on a manual clock.
#include "server/ops/auth_backoff.h"

#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace metasrv::server {
namespace {

using absl::Seconds;

TEST(AuthBackoffTest, FreeFailuresThenDoublingWaitsOneAfterAnother) {
  core::ManualClock clock;
  // No rate in all: the host's own waits alone.
  AuthBackoff backoff({/*free_failures=*/3, Seconds(1), Seconds(5), 16, 0},
                      &clock);
  const absl::Time t0 = clock.Monotonic();
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(backoff.Failed("ipv4:10.0.0.1"), t0);  // Answered at once.
  }
  EXPECT_EQ(backoff.Failed("ipv4:10.0.0.1"), t0 + Seconds(1));
  // A guess sent while the last waits is answered after it, its own wait
  // later (guessing in parallel gains nothing).
  EXPECT_EQ(backoff.Failed("ipv4:10.0.0.1"), t0 + Seconds(3));
  clock.Advance(Seconds(10));
  const absl::Time t1 = clock.Monotonic();
  EXPECT_EQ(backoff.Failed("ipv4:10.0.0.1"), t1 + Seconds(4));
  EXPECT_EQ(backoff.Failed("ipv4:10.0.0.1"), t1 + Seconds(9));  // Ceiling 5.
  // Another host is not slowed.
  EXPECT_EQ(backoff.Failed("ipv4:10.0.0.2"), t1);
  // A success forgets the failures.
  backoff.Succeeded("ipv4:10.0.0.1");
  clock.Advance(Seconds(10));
  EXPECT_EQ(backoff.Failed("ipv4:10.0.0.1"), clock.Monotonic());
}

TEST(AuthBackoffTest, WrongAnswersInAllGoAtTheirRate) {
  core::ManualClock clock;
  // Every host's failures free: only the rate in all applies, 10 a second.
  AuthBackoff backoff({1000, Seconds(1), Seconds(5), 1 << 20, 10}, &clock);
  const absl::Time t0 = clock.Monotonic();
  // 6,000 hosts, one guess each, at the same instant: they wait in line.
  absl::Time last;
  for (int i = 0; i < 6000; ++i) {
    last = backoff.Failed(absl::StrCat("ipv4:127.0.", i / 250, ".", i % 250));
  }
  EXPECT_EQ(last, t0 + absl::Milliseconds(100) * 6000);
  // Once the line is past, the next goes a tenth of a second after now.
  clock.Advance(Seconds(700));
  EXPECT_EQ(backoff.Failed("ipv4:10.0.0.9"),
            clock.Monotonic() + absl::Milliseconds(100));
}

TEST(AuthBackoffTest, AFloodOfHostsKeepsTheTableBounded) {
  core::ManualClock clock;
  AuthBackoff backoff({0, Seconds(1), Seconds(60), /*max_peers=*/4, 0},
                      &clock);
  backoff.Failed("slow");  // Waits 1 s, then 2 s.
  backoff.Failed("slow");
  for (int i = 0; i < 100; ++i) {
    clock.Advance(absl::Milliseconds(1));
    backoff.Failed(absl::StrCat("host", i));
  }
  EXPECT_EQ(backoff.size(), 4u);
}

TEST(AuthBackoffTest, ManyThreadsFailAndSucceed) {
  core::ManualClock clock;
  AuthBackoff backoff({2, Seconds(1), Seconds(8), 64, 1000}, &clock);
  const absl::Time t0 = clock.Monotonic();
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 2000; ++i) {
        const std::string host = absl::StrCat("h", (t * 7 + i) % 100);
        if (i % 5 == 0) {
          backoff.Succeeded(host);
        } else {
          EXPECT_GE(backoff.Failed(host), t0);
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_LE(backoff.size(), 64u);
}

}  // namespace
}  // namespace metasrv::server
