#include "server/ops/refused_reports.h"

#include <thread>
#include <vector>

#include "core/clock.h"
#include "gtest/gtest.h"

namespace metasrv::server {
namespace {

std::vector<uint64_t> Ids(const std::vector<Refusal>& list) {
  std::vector<uint64_t> ids;
  for (const Refusal& r : list) ids.push_back(r.node_id);
  return ids;
}

TEST(RefusedReportsTest, CountsUntilAMergeAndKeepsTheLatestWords) {
  core::ManualClock clock;
  RefusedReports refused(&clock);
  refused.Merged(9);  // Nothing refused: nothing to forget.
  refused.Refused(7, absl::ResourceExhaustedError("first (--max_nodes)"));
  clock.Advance(absl::Seconds(1));
  refused.Refused(7, absl::ResourceExhaustedError("second (--max_total_flows)"));
  refused.Refused(3, absl::InvalidArgumentError("too many flows"));
  std::vector<Refusal> list = refused.List({});
  ASSERT_EQ(Ids(list), (std::vector<uint64_t>{3, 7}));
  EXPECT_EQ(list[1].count, 2u);
  EXPECT_EQ(list[1].why, "second (--max_total_flows)");
  EXPECT_EQ(list[1].last_ms, absl::ToUnixMillis(clock.Now()));
  EXPECT_EQ(Ids(refused.List({7, 100})), (std::vector<uint64_t>{7}));
  refused.Merged(7);
  EXPECT_EQ(Ids(refused.List({})), (std::vector<uint64_t>{3}));
}

TEST(RefusedReportsTest, ForgetsTheStaleAndTheOldestPastItsCapacity) {
  core::ManualClock clock;
  RefusedReports refused(&clock, /*capacity=*/3, /*keep=*/absl::Minutes(5));
  for (uint64_t node = 1; node <= 3; ++node) {
    refused.Refused(node, absl::ResourceExhaustedError("full"));
    clock.Advance(absl::Seconds(1));
  }
  refused.Refused(4, absl::ResourceExhaustedError("full"));  // 1 goes.
  EXPECT_EQ(Ids(refused.List({})), (std::vector<uint64_t>{2, 3, 4}));
  clock.Advance(absl::Minutes(5) - absl::Seconds(1));
  refused.Refused(4, absl::ResourceExhaustedError("full"));
  EXPECT_EQ(Ids(refused.List({})), (std::vector<uint64_t>{3, 4}));  // 2: stale.
  clock.Advance(absl::Minutes(6));
  EXPECT_TRUE(refused.List({}).empty());
}

TEST(RefusedReportsTest, ManyThreadsRefuseAndMerge) {
  core::ManualClock clock;
  RefusedReports refused(&clock, /*capacity=*/64);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (uint64_t i = 0; i < 2000; ++i) {
        const uint64_t node = t * 1000 + i % 100;
        refused.Refused(node, absl::ResourceExhaustedError("full"));
        if (i % 3 == 0) refused.Merged(node);
        if (i % 500 == 0) refused.List({});
      }
    });
  }
  for (std::thread& t : threads) t.join();
  const std::vector<Refusal> list = refused.List({});
  EXPECT_LE(list.size(), 64u);
  for (size_t i = 1; i < list.size(); ++i) {
    EXPECT_LT(list[i - 1].node_id, list[i].node_id);
  }
}

}  // namespace
}  // namespace metasrv::server
