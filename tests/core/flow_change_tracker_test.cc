#include "core/flow_change_tracker.h"

#include <atomic>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/core/brute_force.h"

namespace metasrv::core {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using testing::Report;

// A readable chunk encoding: "id=size/exec;" per flow.
std::string TextChunk(absl::Span<const AggregateFlow> flows) {
  std::string out;
  for (const AggregateFlow& f : flows) {
    absl::StrAppend(&out, f.stat.flow_id, "=", f.stat.state_size, "/",
                    f.stat.last_exec_time, ";");
  }
  return out;
}

std::vector<uint32_t> Ids(const std::vector<AggregateFlow>& flows) {
  std::vector<uint32_t> ids;
  for (const AggregateFlow& f : flows) ids.push_back(f.stat.flow_id);
  return ids;
}

std::string Joined(const FlowChangeTracker::Update& update) {
  std::string out;
  for (const auto& chunk : update.chunks) out += *chunk;
  return out;
}

class FlowChangeTrackerTest : public ::testing::Test {
 protected:
  FlowStateManager manager_;
  FlowChangeTracker tracker_{ChunkEncoding::kReaderSlot1, &TextChunk,
                             manager_.term()};
};

TEST_F(FlowChangeTrackerTest, EmptyThenEveryFlowIsNew) {
  FlowChangeTracker::Update update = tracker_.Advance(manager_);
  EXPECT_FALSE(update.found);
  EXPECT_FALSE(update.reset);
  EXPECT_THAT(update.changed, IsEmpty());
  EXPECT_THAT(update.chunks, IsEmpty());
  ASSERT_TRUE(manager_.Merge(1, Report({{1, 10, 100}, {2000, 20, 200}})).ok());
  update = tracker_.Advance(manager_);
  EXPECT_TRUE(update.found);
  EXPECT_THAT(Ids(update.changed), ElementsAre(1u, 2000u));
  EXPECT_THAT(update.removed, IsEmpty());
  ASSERT_EQ(update.chunks.size(), 2u);  // Flows 1 and 2000 are chunks 0, 1.
  EXPECT_EQ(Joined(update), "1=10/100;2000=20/200;");
}

TEST_F(FlowChangeTrackerTest, OnlyChangedFlowsAndOnlyChangedChunksReencoded) {
  ASSERT_TRUE(manager_.Merge(1, Report({{1, 10, 100}, {2, 5, 5}})).ok());
  ASSERT_TRUE(manager_.Merge(2, Report({{2000, 20, 200}})).ok());
  const FlowChangeTracker::Update first = tracker_.Advance(manager_);
  // Node 1 raises flow 2 only; node 2 reports the same again.
  ASSERT_TRUE(manager_.Merge(1, Report({{1, 10, 100}, {2, 6, 5}})).ok());
  ASSERT_TRUE(manager_.Merge(2, Report({{2000, 20, 200}})).ok());
  const FlowChangeTracker::Update second = tracker_.Advance(manager_);
  ASSERT_EQ(second.changed.size(), 1u);
  EXPECT_EQ(second.changed[0].stat.flow_id, 2u);
  EXPECT_EQ(second.changed[0].stat.state_size, 6u);
  EXPECT_THAT(second.removed, IsEmpty());
  EXPECT_EQ(Joined(second), "1=10/100;2=6/5;2000=20/200;");
  // Chunk 1 did not change: its bytes are the very same object.
  ASSERT_EQ(second.chunks.size(), 2u);
  EXPECT_EQ(second.chunks[1].get(), first.chunks[1].get());
  EXPECT_NE(second.chunks[0].get(), first.chunks[0].get());
  // Nothing at all changed: nothing to tell, nothing encoded.
  const FlowChangeTracker::Update third = tracker_.Advance(manager_);
  EXPECT_THAT(third.changed, IsEmpty());
  EXPECT_EQ(third.chunks[0].get(), second.chunks[0].get());
}

TEST_F(FlowChangeTrackerTest, RemovedFlowsAndEmptiedChunks) {
  ASSERT_TRUE(manager_.Merge(1, Report({{1, 10, 100}, {2, 5, 5}})).ok());
  ASSERT_TRUE(manager_.Merge(2, Report({{2000, 20, 200}, {5000, 1, 1}})).ok());
  tracker_.Advance(manager_);
  const uint32_t forget[] = {2, 2000};
  ASSERT_TRUE(manager_.ForgetFlows(forget).ok());
  FlowChangeTracker::Update update = tracker_.Advance(manager_);
  EXPECT_THAT(update.changed, IsEmpty());
  EXPECT_THAT(update.removed, ElementsAre(2u, 2000u));
  EXPECT_EQ(Joined(update), "1=10/100;5000=1/1;");
  // Node 1 stops reporting flow 1: its chunk is gone entirely.
  ASSERT_TRUE(manager_.Merge(1, Report({})).ok());
  update = tracker_.Advance(manager_);
  EXPECT_THAT(update.removed, ElementsAre(1u));
  EXPECT_EQ(Joined(update), "5000=1/1;");
}

TEST_F(FlowChangeTrackerTest, ResetStartsOverWithTheNewTerm) {
  ASSERT_TRUE(manager_.Merge(1, Report({{1, 10, 100}})).ok());
  tracker_.Advance(manager_);
  manager_.Reset();
  FlowChangeTracker::Update update = tracker_.Advance(manager_);
  EXPECT_TRUE(update.reset);
  EXPECT_FALSE(update.found);
  EXPECT_THAT(update.removed, IsEmpty());  // A reset says it all.
  EXPECT_THAT(update.chunks, IsEmpty());
  // The new term's aggregate numbers its chunk versions afresh; the tracker
  // must not take a chunk of the same version for the one it knew.
  ASSERT_TRUE(manager_.Merge(1, Report({{1, 99, 99}})).ok());
  update = tracker_.Advance(manager_);
  EXPECT_FALSE(update.reset);
  EXPECT_THAT(Ids(update.changed), ElementsAre(1u));
  EXPECT_EQ(Joined(update), "1=99/99;");
}

// Writers merge random reports from several threads while the tracker's
// owner applies each update's changes to a map of its own: every update's
// whole state is that map, and once the writers stop, the map is the
// aggregate.
TEST_F(FlowChangeTrackerTest, AppliedChangesFollowTheAggregateUnderWriters) {
  constexpr int kWriters = 2, kNodes = 40, kFlows = 5000;
  std::atomic<bool> stop{false};
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      std::mt19937 rng(w);
      while (!stop.load()) {
        const uint64_t node = rng() % kNodes;
        FlowStateValue::Builder report;
        for (int i = 0; i < 8; ++i) {
          const uint32_t flow = rng() % kFlows;
          report.SetStateSize(flow, rng() % 1000);
          report.SetLastExecTime(flow, rng() % 1000);
        }
        ASSERT_TRUE(manager_.Merge(node, report.Build()).ok());
        if (rng() % 3000 == 0) manager_.Reset();
        std::this_thread::yield();
      }
    });
  }
  std::map<uint32_t, std::string> applied;
  auto as_text = [&applied] {
    std::string out;
    for (const auto& [id, text] : applied) out += text;
    return out;
  };
  // Until the writers' changes crossed several resets and many updates.
  int resets = 0, rounds = 0;
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  for (; (resets < 3 || rounds < 200) && absl::Now() < deadline; ++rounds) {
    const FlowChangeTracker::Update update = tracker_.Advance(manager_);
    if (update.reset) {
      applied.clear();
      ++resets;
    }
    for (uint32_t id : update.removed) ASSERT_EQ(applied.erase(id), 1u) << id;
    for (const AggregateFlow& f : update.changed) {
      applied[f.stat.flow_id] = TextChunk(absl::MakeConstSpan(&f, 1));
    }
    ASSERT_EQ(as_text(), Joined(update)) << "round " << rounds;
  }
  stop = true;
  for (std::thread& t : writers) t.join();
  const FlowChangeTracker::Update last = tracker_.Advance(manager_);
  if (last.reset) applied.clear();
  for (uint32_t id : last.removed) applied.erase(id);
  for (const AggregateFlow& f : last.changed) {
    applied[f.stat.flow_id] = TextChunk(absl::MakeConstSpan(&f, 1));
  }
  const std::vector<AggregateFlow> now =
      manager_.Read({}).value_or(std::vector<AggregateFlow>{});
  EXPECT_EQ(as_text(), TextChunk(now));
  EXPECT_GE(resets, 3);
}

}  // namespace
}  // namespace metasrv::core
