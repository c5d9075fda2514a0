#include "core/flow_ranking.h"

#include <algorithm>
#include <random>

#include "gtest/gtest.h"

namespace metasrv::core {
namespace {

const absl::Time kNow = absl::UnixEpoch() + absl::Hours(1000);
const int64_t kNowMs = absl::ToUnixMillis(kNow);

AggregateFlow Flow(uint32_t id, std::optional<uint64_t> size,
                   std::optional<int64_t> exec, uint64_t node = 0) {
  AggregateFlow f;
  f.stat.flow_id = id;
  if (size.has_value()) {
    f.stat.fields |= kStateSize;
    f.stat.state_size = *size;
    f.state_size_node = node;
  }
  if (exec.has_value()) {
    f.stat.fields |= kLastExecTime;
    f.stat.last_exec_time = *exec;
    f.last_exec_time_node = node;
  }
  return f;
}

std::vector<uint32_t> Ids(const std::vector<RankedFlow>& flows) {
  std::vector<uint32_t> ids;
  for (const RankedFlow& f : flows) ids.push_back(f.flow_id);
  return ids;
}

TEST(FlowRankerTest, TopNByEachFieldTiesToTheLowerIdMissingFieldsLeftOut) {
  FlowRanker ranker(kNow, 2, absl::Minutes(5), {60, 600});
  ranker.Add(Flow(1, 10, kNowMs - 1000, 7));              // lag 1 s
  ranker.Add(Flow(2, 30, kNowMs - 700000, 8));            // lag 700 s: stalled
  ranker.Add(Flow(3, 30, std::nullopt, 9));               // no exec time
  ranker.Add(Flow(4, std::nullopt, kNowMs - 400000, 5));  // lag 400 s
  ranker.Add(Flow(5, 20, kNowMs + 5000, 6));  // in the future: lag 0
  FlowRanking r = ranker.Finish();
  EXPECT_EQ(r.flows, 5u);
  EXPECT_EQ(Ids(r.largest), (std::vector<uint32_t>{2, 3}));  // 30, 30: 2 first
  EXPECT_EQ(r.largest[1].node, 9u);
  EXPECT_EQ(r.largest[0].state_size, 30u);
  EXPECT_EQ(Ids(r.most_lagging), (std::vector<uint32_t>{2, 4}));
  EXPECT_DOUBLE_EQ(r.most_lagging[0].lag_seconds, 700);
  EXPECT_EQ(r.most_lagging[0].node, 8u);
  EXPECT_EQ(r.most_lagging[1].last_exec_time, kNowMs - 400000);
  EXPECT_EQ(r.stalled, 2u);  // 700 s and 400 s > 300 s.
  // Buckets <= 60, <= 600, +Inf, cumulative: {1, 0}, {400}, {700}.
  EXPECT_EQ(r.lag_cumulative, (std::vector<uint64_t>{2, 3, 4}));
  EXPECT_EQ(r.stalled_listed, (absl::flat_hash_set<uint32_t>{2, 4}));
}

// A stalled flow listed once stays listed while it is stalled, though more
// flows lag more; one that executes again gives its place back.
TEST(FlowRankerTest, AListedStalledFlowKeepsItsPlaceWhileStalled) {
  auto rank = [](int64_t now_ms, absl::flat_hash_set<uint32_t> keep,
                 const std::vector<AggregateFlow>& flows) {
    FlowRanker ranker(absl::FromUnixMillis(now_ms), 2, absl::Minutes(5), {60},
                      std::move(keep));
    for (const AggregateFlow& f : flows) ranker.Add(f);
    return ranker.Finish();
  };
  // Flow 9 has stalled for 400 s; flows 1 and 2 lag less.
  FlowRanking first =
      rank(kNowMs, {},
           {Flow(1, 1, kNowMs - 10000), Flow(2, 1, kNowMs - 20000),
            Flow(9, 1, kNowMs - 400000)});
  EXPECT_EQ(Ids(first.most_lagging), (std::vector<uint32_t>{9, 2}));
  EXPECT_EQ(first.stalled_listed, (absl::flat_hash_set<uint32_t>{9}));
  // Two flows now lag more than 9 does (a load whose clock is far behind):
  // by lag alone 9 would drop out; it is kept, the top other fills up.
  const int64_t later = kNowMs + 60000;
  const std::vector<AggregateFlow> flows = {Flow(1, 1, 1000), Flow(2, 1, 2000),
                                            Flow(9, 1, kNowMs - 400000)};
  FlowRanking second = rank(later, first.stalled_listed, flows);
  EXPECT_EQ(Ids(second.most_lagging), (std::vector<uint32_t>{1, 9}));
  EXPECT_DOUBLE_EQ(second.most_lagging[1].lag_seconds, 460);
  EXPECT_EQ(second.stalled_listed, (absl::flat_hash_set<uint32_t>{1, 9}));
  // Without the memory, lag alone decides.
  EXPECT_EQ(Ids(rank(later, {}, flows).most_lagging),
            (std::vector<uint32_t>{1, 2}));
  // Flow 9 executes again: no longer stalled, so no longer kept.
  FlowRanking third =
      rank(later, second.stalled_listed,
           {Flow(1, 1, 1000), Flow(2, 1, 2000), Flow(9, 1, later)});
  EXPECT_EQ(Ids(third.most_lagging), (std::vector<uint32_t>{1, 2}));
}

TEST(FlowRankerTest, ZeroTopNKeepsOnlyTheCounts) {
  FlowRanker ranker(kNow, 0, absl::Minutes(5), {});
  ranker.Add(Flow(1, 10, kNowMs - 600000));
  FlowRanking r = ranker.Finish();
  EXPECT_TRUE(r.largest.empty());
  EXPECT_TRUE(r.most_lagging.empty());
  EXPECT_EQ(r.stalled, 1u);
  EXPECT_EQ(r.lag_cumulative, (std::vector<uint64_t>{1}));
}

// Against a full sort, on random flows with many equal values.
TEST(FlowRankerTest, MatchesAFullSort) {
  std::mt19937 rng(7);
  for (int round = 0; round < 20; ++round) {
    const size_t n = 1 + rng() % 3000, top = rng() % 40;
    FlowRanker ranker(kNow, top, absl::Seconds(50), {10, 100});
    std::vector<AggregateFlow> flows;
    for (uint32_t id = 0; id < n; ++id) {
      flows.push_back(
          Flow(id * 3 + 1, rng() % 50, kNowMs - (rng() % 100) * 1000));
    }
    std::shuffle(flows.begin(), flows.end(), rng);
    for (const AggregateFlow& f : flows) ranker.Add(f);
    FlowRanking r = ranker.Finish();
    auto by = [&](auto key) {
      std::vector<AggregateFlow> sorted = flows;
      std::sort(sorted.begin(), sorted.end(),
                [&](const auto& a, const auto& b) {
                  if (key(a) != key(b)) return key(a) > key(b);
                  return a.stat.flow_id < b.stat.flow_id;
                });
      std::vector<uint32_t> ids;
      for (size_t i = 0; i < std::min(top, sorted.size()); ++i) {
        ids.push_back(sorted[i].stat.flow_id);
      }
      return ids;
    };
    EXPECT_EQ(Ids(r.largest), by([](const AggregateFlow& f) {
                return static_cast<int64_t>(f.stat.state_size);
              }));
    EXPECT_EQ(Ids(r.most_lagging), by([](const AggregateFlow& f) {
                return -f.stat.last_exec_time;
              }));
    uint64_t stalled = 0;
    for (const AggregateFlow& f : flows) {
      stalled += kNowMs - f.stat.last_exec_time > 50000;
    }
    EXPECT_EQ(r.stalled, stalled);
    EXPECT_EQ(r.lag_cumulative.back(), n);
  }
}

}  // namespace
}  // namespace metasrv::core
