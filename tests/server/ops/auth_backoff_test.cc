// Failed admin attempts, slowed per host on a manual clock.
#include "server/ops/auth_backoff.h"

#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace metasrv::server {
namespace {

using absl::Seconds;

TEST(AuthBackoffTest, FreeFailuresThenDoublingWaitsUpToTheCeiling) {
  core::ManualClock clock;
  AuthBackoff backoff({/*free_failures=*/3, Seconds(1), Seconds(5), 16},
                      &clock);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(backoff.Failed("ipv4:10.0.0.1"), absl::ZeroDuration());
    EXPECT_EQ(backoff.WaitOf("ipv4:10.0.0.1"), absl::ZeroDuration());
  }
  EXPECT_EQ(backoff.Failed("ipv4:10.0.0.1"), Seconds(1));
  EXPECT_EQ(backoff.WaitOf("ipv4:10.0.0.1"), Seconds(1));
  clock.Advance(absl::Milliseconds(400));
  EXPECT_EQ(backoff.WaitOf("ipv4:10.0.0.1"), absl::Milliseconds(600));
  clock.Advance(absl::Milliseconds(600));
  EXPECT_EQ(backoff.WaitOf("ipv4:10.0.0.1"), absl::ZeroDuration());
  EXPECT_EQ(backoff.Failed("ipv4:10.0.0.1"), Seconds(2));
  EXPECT_EQ(backoff.Failed("ipv4:10.0.0.1"), Seconds(4));
  EXPECT_EQ(backoff.Failed("ipv4:10.0.0.1"), Seconds(5));  // The ceiling.
  EXPECT_EQ(backoff.Failed("ipv4:10.0.0.1"), Seconds(5));
  // Another host is not slowed.
  EXPECT_EQ(backoff.WaitOf("ipv4:10.0.0.2"), absl::ZeroDuration());
  // A success forgets the failures.
  backoff.Succeeded("ipv4:10.0.0.1");
  EXPECT_EQ(backoff.WaitOf("ipv4:10.0.0.1"), absl::ZeroDuration());
  EXPECT_EQ(backoff.Failed("ipv4:10.0.0.1"), absl::ZeroDuration());
}

TEST(AuthBackoffTest, AFloodOfHostsKeepsTheTableBounded) {
  core::ManualClock clock;
  AuthBackoff backoff({0, Seconds(1), Seconds(60), /*max_peers=*/4}, &clock);
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
  AuthBackoff backoff({2, Seconds(1), Seconds(8), 64}, &clock);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 2000; ++i) {
        const std::string host = absl::StrCat("h", (t * 7 + i) % 100);
        if (i % 5 == 0) {
          backoff.Succeeded(host);
        } else {
          EXPECT_LE(backoff.Failed(host), Seconds(8));
        }
        EXPECT_LE(backoff.WaitOf(host), Seconds(8));
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_LE(backoff.size(), 64u);
}

}  // namespace
}  // namespace metasrv::server
