#include "core/flow_state_manager.h"

#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/flow_state_codec.h"
#include "core/flow_state_keys.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kv/memory_kv.h"
#include "tests/core/brute_force.h"

namespace metasrv::core {
namespace {

using Builder = FlowStateValue::Builder;

using testing::Report;

class FlowStateManagerTest : public ::testing::Test {
 protected:
  FlowStateValue GetValue() {
    absl::StatusOr<std::optional<FlowStateValue>> v = manager_.Get();
    EXPECT_TRUE(v.ok()) << v.status();
    EXPECT_TRUE(v->has_value());
    return v->value_or(FlowStateValue());
  }
  std::string RawGlobal() { return kv_.Get(std::string(kFlowStateKey)).value_or(""); }

  kv::MemoryKv kv_;
  FlowStateManager manager_{&kv_};
};

TEST_F(FlowStateManagerTest, NothingBeforeFirstMerge) {
  absl::StatusOr<std::optional<FlowStateValue>> v = manager_.Get();
  ASSERT_TRUE(v.ok());
  EXPECT_FALSE(v->has_value());
  EXPECT_FALSE(manager_.Read({})->has_value());
}

TEST_F(FlowStateManagerTest, TwoNodesReportingDifferentFlowsBothAppear) {
  ASSERT_TRUE(manager_.Merge(1, Report({{10, 100, 1000}})).ok());
  ASSERT_TRUE(manager_.Merge(2, Report({{20, 200, 2000}})).ok());
  EXPECT_EQ(GetValue(), Report({{10, 100, 1000}, {20, 200, 2000}}));
  EXPECT_EQ(RawGlobal(),
            R"({"state_size":{"10":100,"20":200},"last_exec_time_map":)"
            R"({"10":1000,"20":2000},"start_time_map":{}})");
  EXPECT_EQ(*kv_.Get(FlowStateNodeKey(1)),
            R"({"state_size":{"10":100},"last_exec_time_map":{"10":1000},"start_time_map":{}})");
  EXPECT_EQ(manager_.node_count(), 2u);
  EXPECT_EQ(manager_.flow_count(), 2u);
}

TEST_F(FlowStateManagerTest, SecondReportReplacesTheFirst) {
  ASSERT_TRUE(manager_.Merge(1, Report({{10, 100, 1000}, {11, 5, 5}})).ok());
  ASSERT_TRUE(manager_.Merge(1, Report({{12, 300, 3000}})).ok());
  EXPECT_EQ(GetValue(), Report({{12, 300, 3000}}));
  EXPECT_EQ(*DecodeFlowState(*kv_.Get(FlowStateNodeKey(1))),
            Report({{12, 300, 3000}}));
}

TEST_F(FlowStateManagerTest, ClockRollbackFromSameNodeIsAccepted) {
  ASSERT_TRUE(manager_.Merge(1, Report({{10, 100, 5000}})).ok());
  ASSERT_TRUE(manager_.Merge(1, Report({{10, 90, 1000}})).ok());
  EXPECT_EQ(GetValue(), Report({{10, 90, 1000}}));
}

TEST_F(FlowStateManagerTest, SharedFlowTakesMaxOfEachFieldAcrossNodes) {
  ASSERT_TRUE(manager_.Merge(1, Report({{10, 4096, 100}})).ok());
  ASSERT_TRUE(manager_.Merge(2, Report({{10, 1024, 900}})).ok());
  EXPECT_EQ(GetValue(), Report({{10, 4096, 900}}));
  absl::StatusOr<std::optional<std::vector<AggregateFlow>>> read =
      manager_.Read({});
  ASSERT_TRUE(read.ok() && read->has_value());
  ASSERT_EQ((*read)->size(), 1u);
  EXPECT_EQ((**read)[0].state_size_node, 1u);
  EXPECT_EQ((**read)[0].last_exec_time_node, 2u);
  // Node 1 lowers its size: the max falls back to node 2's.
  ASSERT_TRUE(manager_.Merge(1, Report({{10, 10, 100}})).ok());
  EXPECT_EQ(GetValue(), Report({{10, 1024, 900}}));
}

TEST_F(FlowStateManagerTest, EmptyReportRemovesOnlyThatNodesFlows) {
  ASSERT_TRUE(manager_.Merge(1, Report({{10, 100, 1000}})).ok());
  ASSERT_TRUE(manager_.Merge(2, Report({{20, 200, 2000}, {10, 50, 50}})).ok());
  ASSERT_TRUE(manager_.Merge(1, FlowStateValue()).ok());
  EXPECT_EQ(GetValue(), Report({{10, 50, 50}, {20, 200, 2000}}));
  EXPECT_EQ(*kv_.Get(FlowStateNodeKey(1)), EncodeFlowState(FlowStateValue()));
}

TEST_F(FlowStateManagerTest, FlowsPresentInOnlySomeMapsStaySo) {
  FlowStateValue only_time = Builder().SetLastExecTime(3, 77).Build();
  FlowStateValue with_start =
      Builder().SetStateSize(3, 1).SetStartTime(3, 55).Build();
  ASSERT_TRUE(manager_.Merge(1, only_time).ok());
  ASSERT_TRUE(manager_.Merge(2, with_start).ok());
  EXPECT_EQ(RawGlobal(),
            R"({"state_size":{"3":1},"last_exec_time_map":{"3":77},"start_time_map":{"3":55}})");
}

TEST_F(FlowStateManagerTest, ResetClearsEverythingAndMergeWorksAfter) {
  ASSERT_TRUE(manager_.Merge(1, Report({{10, 100, 1000}})).ok());
  ASSERT_TRUE(manager_.Merge(2, Report({{20, 200, 2000}})).ok());
  // Two report keys, two flownode records and the global key.
  EXPECT_EQ(*kv_.Reset(), 5u);
  EXPECT_FALSE(manager_.Get()->has_value());
  EXPECT_FALSE(manager_.Read({})->has_value());
  EXPECT_EQ(kv_.Get(std::string(kFlowStateKey)).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(kv_.Get(FlowStateNodeKey(1)).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(manager_.node_count(), 0u);
  // Node 2 reports again; node 1's pre-reset flows must not come back.
  ASSERT_TRUE(manager_.Merge(2, Report({{21, 1, 1}})).ok());
  EXPECT_EQ(GetValue(), Report({{21, 1, 1}}));
  EXPECT_EQ(kv_.size(), 3u);  // Node 2's report and record, the aggregate.
  EXPECT_EQ(manager_.ListFlownodes({})->size(), 1u);
}

TEST_F(FlowStateManagerTest, ReaderHoldingOldValueAcrossResetSeesOldState) {
  ASSERT_TRUE(manager_.Merge(1, Report({{10, 100, 1000}})).ok());
  const std::string before = RawGlobal();
  ASSERT_TRUE(kv_.Reset().ok());
  ASSERT_TRUE(manager_.Merge(1, Report({{11, 1, 1}})).ok());
  EXPECT_NE(RawGlobal(), before);
  EXPECT_EQ(GetValue(), Report({{11, 1, 1}}));
}

TEST_F(FlowStateManagerTest, PutWritesValueUntilNextMerge) {
  ASSERT_TRUE(manager_.Merge(1, Report({{10, 100, 1000}})).ok());
  FlowStateValue put = Report({{99, 9, 9}});
  ASSERT_TRUE(manager_.Put(put).ok());
  EXPECT_EQ(GetValue(), put);
  EXPECT_EQ((*manager_.Read({}))->at(0).stat.flow_id, 99u);
  ASSERT_TRUE(manager_.Merge(2, Report({{20, 2, 2}})).ok());
  EXPECT_EQ(GetValue(), Report({{10, 100, 1000}, {20, 2, 2}}));
}

TEST_F(FlowStateManagerTest, ReadFiltersByFlowIds) {
  ASSERT_TRUE(manager_.Merge(1, Report({{1, 1, 1}, {2, 2, 2}, {3000, 3, 3}})).ok());
  absl::StatusOr<std::optional<std::vector<AggregateFlow>>> read =
      manager_.Read({3000, 7, 1, 3000});
  ASSERT_TRUE(read.ok() && read->has_value());
  ASSERT_EQ((*read)->size(), 2u);
  EXPECT_EQ((**read)[0].stat.flow_id, 1u);
  EXPECT_EQ((**read)[1].stat.flow_id, 3000u);
  EXPECT_EQ((**read)[1].stat.state_size, 3u);
}

TEST_F(FlowStateManagerTest, RebuildsIndexFromNodeKeysAlreadyInKv) {
  ASSERT_TRUE(kv_.Put(FlowStateNodeKey(5), EncodeFlowState(Report({{1, 50, 5}}))).ok());
  ASSERT_TRUE(manager_.Merge(6, Report({{1, 60, 4}})).ok());
  EXPECT_EQ(GetValue(), Report({{1, 60, 5}}));
  EXPECT_EQ(manager_.node_count(), 2u);
}

TEST_F(FlowStateManagerTest, CorruptNodeKeyIsReportedNotIgnored) {
  ASSERT_TRUE(kv_.Put(FlowStateNodeKey(5), "{not json").ok());
  absl::Status s = manager_.Merge(6, Report({{1, 60, 4}}));
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("__flow/state/node/5"), std::string::npos);
}

// Many threads merge disjoint nodes' reports at once; run several rounds.
TEST_F(FlowStateManagerTest, ConcurrentMergesLoseNothing) {
  constexpr int kThreads = 8, kNodesPerThread = 25, kRounds = 20;
  for (int round = 0; round < kRounds; ++round) {
    kv::MemoryKv kv;
    FlowStateManager manager(&kv);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int n = 0; n < kNodesPerThread; ++n) {
          const uint64_t node = t * kNodesPerThread + n;
          // Each node first reports a throwaway flow, then its real one.
          EXPECT_TRUE(manager.Merge(node, Report({{100000, 1, 1}})).ok());
          const uint32_t flow = static_cast<uint32_t>(node);
          EXPECT_TRUE(manager.Merge(node, Report({{flow, node + 1, round}})).ok());
        }
      });
    }
    // A reader runs alongside and must always decode a valid value.
    std::thread reader([&] {
      for (int i = 0; i < 50; ++i) {
        absl::StatusOr<std::optional<FlowStateValue>> v = manager.Get();
        EXPECT_TRUE(v.ok()) << v.status();
      }
    });
    for (auto& th : threads) th.join();
    reader.join();
    absl::StatusOr<std::optional<FlowStateValue>> v = manager.Get();
    ASSERT_TRUE(v.ok() && v->has_value());
    const FlowStateValue& value = **v;
    ASSERT_EQ(value.flows().size(), static_cast<size_t>(kThreads * kNodesPerThread));
    for (const FlowStat& s : value.flows()) {
      EXPECT_EQ(s.state_size, s.flow_id + 1u);
      EXPECT_EQ(s.last_exec_time, round);
    }
  }
}

// Merges racing with resets: afterwards, the aggregate equals exactly what the
// node keys that survived say.
TEST_F(FlowStateManagerTest, MergesRacingResetsLeaveConsistentState) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 300; ++i) {
        EXPECT_TRUE(manager_.Merge(t, Report({{static_cast<uint32_t>(t * 1000 + i % 7),
                                                static_cast<uint64_t>(i), i}}))
                        .ok());
      }
    });
  }
  threads.emplace_back([&] {
    for (int i = 0; i < 30; ++i) ASSERT_TRUE(kv_.Reset().ok());
  });
  for (auto& th : threads) th.join();
  // The last reset may have come after every merge; one more merge makes sure
  // the aggregate exists.
  ASSERT_TRUE(manager_.Merge(99, Report({{99999, 9, 9}})).ok());
  absl::StatusOr<kv::RangeResponse> nodes =
      kv_.Range({std::string(kFlowStateNodePrefix),
                 kv::PrefixEnd(std::string(kFlowStateNodePrefix))});
  ASSERT_TRUE(nodes.ok());
  FlowStateValue::Builder all;
  for (const kv::KeyValue& e : nodes->kvs) {
    absl::StatusOr<FlowStateValue> report = DecodeFlowState(e.value);
    ASSERT_TRUE(report.ok()) << report.status();
    for (const FlowStat& s : report->flows()) {
      all.SetStateSize(s.flow_id, s.state_size).SetLastExecTime(s.flow_id, s.last_exec_time);
    }
  }
  EXPECT_EQ(GetValue(), std::move(all).Build());
}

}  // namespace
}  // namespace metasrv::core
