#include "core/flow_state_manager.h"

#include <atomic>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "core/flow_state_codec.h"
#include "core/flow_state_keys.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/core/brute_force.h"

namespace metasrv::core {
namespace {

using Builder = FlowStateValue::Builder;

using testing::Report;

class FlowStateManagerTest : public ::testing::Test {
 protected:
  // The aggregate as the KV's JSON says it; the typed Get() must agree.
  FlowStateValue GetValue() {
    std::optional<FlowStateValue> typed = manager_.Aggregate();
    EXPECT_TRUE(typed.has_value());
    absl::StatusOr<FlowStateValue> decoded = DecodeFlowState(RawGlobal());
    EXPECT_TRUE(decoded.ok()) << decoded.status();
    EXPECT_EQ(typed.value_or(FlowStateValue()),
              decoded.value_or(FlowStateValue()));
    return decoded.value_or(FlowStateValue());
  }
  std::string RawGlobal() {
    return manager_.Get(std::string(kFlowStateKey)).value_or("");
  }
  std::vector<std::string> RangeKeys(const kv::RangeRequest& req,
                                     bool* more = nullptr) {
    absl::StatusOr<kv::RangeResponse> r = manager_.Range(req);
    EXPECT_TRUE(r.ok()) << r.status();
    std::vector<std::string> keys;
    if (!r.ok()) return keys;
    for (const kv::KeyValue& e : r->kvs) keys.push_back(e.key);
    if (more != nullptr) *more = r->more;
    return keys;
  }

  FlowStateManager manager_;
  FlowStateManager& kv_ = manager_;  // The KV view, read as a client does.
};

TEST_F(FlowStateManagerTest, NothingBeforeFirstMerge) {
  EXPECT_FALSE(manager_.Aggregate().has_value());
  EXPECT_FALSE(manager_.Read({}).has_value());
  EXPECT_EQ(manager_.size(), 0u);
}

TEST_F(FlowStateManagerTest, TwoNodesReportingDifferentFlowsBothAppear) {
  ASSERT_TRUE(manager_.Merge(1, Report({{10, 100, 1000}})).ok());
  ASSERT_TRUE(manager_.Merge(2, Report({{20, 200, 2000}})).ok());
  EXPECT_EQ(GetValue(), Report({{10, 100, 1000}, {20, 200, 2000}}));
  EXPECT_EQ(RawGlobal(),
            R"({"state_size":{"10":100,"20":200},"last_exec_time_map":)"
            R"({"10":1000,"20":2000},"start_time_map":{}})");
  EXPECT_EQ(
      *kv_.Get(FlowStateNodeKey(1)),
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
  std::optional<std::vector<AggregateFlow>> read = manager_.Read({});
  ASSERT_TRUE(read.has_value());
  ASSERT_EQ(read->size(), 1u);
  EXPECT_EQ((*read)[0].state_size_node, 1u);
  EXPECT_EQ((*read)[0].last_exec_time_node, 2u);
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
  EXPECT_EQ(
      RawGlobal(),
      R"({"state_size":{"3":1},"last_exec_time_map":{"3":77},"start_time_map":{"3":55}})");
}

TEST_F(FlowStateManagerTest, ResetClearsEverythingAndMergeWorksAfter) {
  ASSERT_TRUE(manager_.Merge(1, Report({{10, 100, 1000}})).ok());
  ASSERT_TRUE(manager_.Merge(2, Report({{20, 200, 2000}})).ok());
  // Two report keys and the global key.
  const uint64_t term = manager_.term();
  const ResetResult reset = manager_.Reset();
  EXPECT_EQ(reset.dropped_keys, 3u);
  EXPECT_EQ(reset.term, term + 1);
  EXPECT_EQ(manager_.term(), term + 1);
  EXPECT_FALSE(manager_.Aggregate().has_value());
  EXPECT_FALSE(manager_.Read({}).has_value());
  EXPECT_EQ(kv_.Get(std::string(kFlowStateKey)).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(kv_.Get(FlowStateNodeKey(1)).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(manager_.node_count(), 0u);
  // Node 2 reports again; node 1's pre-reset flows must not come back.
  ASSERT_TRUE(manager_.Merge(2, Report({{21, 1, 1}})).ok());
  EXPECT_EQ(GetValue(), Report({{21, 1, 1}}));
  EXPECT_EQ(kv_.size(), 2u);  // Node 2's report, the aggregate.
  EXPECT_EQ(manager_.ListFlownodes({}).size(), 1u);
}

TEST_F(FlowStateManagerTest, HeartbeatOfAnEarlierTermIsRefused) {
  const uint64_t term = manager_.term();
  ASSERT_TRUE(manager_.Merge(1, Report({{10, 100, 1000}}), term).ok());
  manager_.Reset();
  absl::Status stale = manager_.Merge(1, Report({{10, 1, 1}}), term);
  EXPECT_EQ(stale.code(), absl::StatusCode::kAborted);
  EXPECT_THAT(std::string(stale.message()), ::testing::HasSubstr("node 1"));
  EXPECT_EQ(manager_.size(), 0u);
  EXPECT_TRUE(manager_.Merge(1, Report({{10, 1, 1}}), manager_.term()).ok());
  EXPECT_EQ(GetValue(), Report({{10, 1, 1}}));
}

TEST_F(FlowStateManagerTest, AggregateAfterResetIsTheNewTermsOnly) {
  ASSERT_TRUE(manager_.Merge(1, Report({{10, 100, 1000}})).ok());
  const std::string before = RawGlobal();
  manager_.Reset();
  ASSERT_TRUE(manager_.Merge(1, Report({{11, 1, 1}})).ok());
  EXPECT_NE(RawGlobal(), before);
  EXPECT_EQ(GetValue(), Report({{11, 1, 1}}));
}

TEST_F(FlowStateManagerTest, ReadFiltersByFlowIds) {
  ASSERT_TRUE(
      manager_.Merge(1, Report({{1, 1, 1}, {2, 2, 2}, {3000, 3, 3}})).ok());
  std::optional<std::vector<AggregateFlow>> read =
      manager_.Read({3000, 7, 1, 3000});
  ASSERT_TRUE(read.has_value());
  ASSERT_EQ(read->size(), 2u);
  EXPECT_EQ((*read)[0].stat.flow_id, 1u);
  EXPECT_EQ((*read)[1].stat.flow_id, 3000u);
  EXPECT_EQ((*read)[1].stat.state_size, 3u);
}

// The KV view: keys in etcd's byte order, `__flow/state` among them, limits
// and keys_only as a stored key would have them.
TEST_F(FlowStateManagerTest, KvViewRangesLikeAnOrderedMap) {
  ASSERT_TRUE(manager_.Merge(2, Report({{1, 1, 1}})).ok());
  ASSERT_TRUE(manager_.Merge(10, Report({{2, 2, 2}})).ok());
  ClusterNode frontend;
  frontend.role = NodeRole::kFrontend;
  frontend.node_id = 5;
  ASSERT_TRUE(manager_.RecordNode(frontend).ok());
  const std::string kZero(1, '\0');
  EXPECT_THAT(RangeKeys({kZero, kZero}),
              ::testing::ElementsAre("__flow/state", "__flow/state/node/10",
                                     "__flow/state/node/2",
                                     "__meta_cluster_node_info-0-1-5"));
  bool more = false;
  EXPECT_THAT(RangeKeys({"__flow/", kv::PrefixEnd("__flow/"), 2}, &more),
              ::testing::ElementsAre("__flow/state", "__flow/state/node/10"));
  EXPECT_TRUE(more);
  EXPECT_THAT(RangeKeys({"__flow/", kv::PrefixEnd("__flow/"), 1}, &more),
              ::testing::ElementsAre("__flow/state"));
  EXPECT_TRUE(more);
  EXPECT_THAT(RangeKeys({"__flow/state", "", 1}, &more),
              ::testing::ElementsAre("__flow/state"));
  EXPECT_FALSE(more);
  EXPECT_THAT(RangeKeys({"__flow/state0", kZero}),
              ::testing::ElementsAre("__meta_cluster_node_info-0-1-5"));
  absl::StatusOr<kv::RangeResponse> keys_only =
      manager_.Range({"__flow/", kv::PrefixEnd("__flow/"), 0, true});
  ASSERT_TRUE(keys_only.ok());
  ASSERT_EQ(keys_only->kvs.size(), 3u);
  for (const kv::KeyValue& e : keys_only->kvs) EXPECT_EQ(e.value, "");
  absl::StatusOr<kv::RangeResponse> values =
      manager_.Range({"__flow/", kv::PrefixEnd("__flow/")});
  ASSERT_TRUE(values.ok());
  EXPECT_EQ(values->kvs[0].value, RawGlobal());
  EXPECT_EQ(values->kvs[2].value, EncodeFlowState(Report({{1, 1, 1}})));
  EXPECT_EQ(manager_.Range({"", ""}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(manager_.Range({"a", kZero, -1}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(FlowStateManagerTest, KvViewPointReads) {
  EXPECT_EQ(manager_.Get(std::string(kFlowStateKey)).status().code(),
            absl::StatusCode::kNotFound);
  ASSERT_TRUE(manager_.Merge(3, Report({{1, 5, 6}})).ok());
  absl::StatusOr<std::vector<kv::KeyValue>> got = manager_.BatchGet(
      {FlowStateNodeKey(3), "nope", std::string(kFlowStateKey),
       std::string(kFlowStateKey)});
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(got->size(), 3u);
  EXPECT_EQ((*got)[0].value, EncodeFlowState(Report({{1, 5, 6}})));
  EXPECT_EQ((*got)[1].key, "__flow/state");
  EXPECT_EQ((*got)[1].value, RawGlobal());
  EXPECT_EQ((*got)[2].value, (*got)[1].value);
  EXPECT_EQ(manager_.Get("nope").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(manager_.size(), 2u);
}

// Many threads merge disjoint nodes' reports at once; run several rounds.
TEST_F(FlowStateManagerTest, ConcurrentMergesLoseNothing) {
  constexpr int kThreads = 8, kNodesPerThread = 25, kRounds = 20;
  for (int round = 0; round < kRounds; ++round) {
    FlowStateManager manager;
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int n = 0; n < kNodesPerThread; ++n) {
          const uint64_t node = t * kNodesPerThread + n;
          // Each node first reports a throwaway flow, then its real one.
          EXPECT_TRUE(manager.Merge(node, Report({{100000, 1, 1}})).ok());
          const uint32_t flow = static_cast<uint32_t>(node);
          EXPECT_TRUE(
              manager.Merge(node, Report({{flow, node + 1, round}})).ok());
        }
      });
    }
    // A reader runs alongside and must always decode a valid value.
    std::thread reader([&] {
      for (int i = 0; i < 50; ++i) {
        absl::StatusOr<std::string> json =
            manager.Get(std::string(kFlowStateKey));
        if (json.ok()) {
          EXPECT_TRUE(DecodeFlowState(*json).ok());
        }
      }
    });
    for (auto& th : threads) th.join();
    reader.join();
    std::optional<FlowStateValue> v = manager.Aggregate();
    ASSERT_TRUE(v.has_value());
    const FlowStateValue& value = *v;
    ASSERT_EQ(value.flows().size(),
              static_cast<size_t>(kThreads * kNodesPerThread));
    for (const FlowStat& s : value.flows()) {
      EXPECT_EQ(s.state_size, s.flow_id + 1u);
      EXPECT_EQ(s.last_exec_time, round);
    }
  }
}

// Range reads racing merges and resets: the node keys of one read are of
// one instant and in byte order, every value decodes, the aggregate (built a
// chunk at a time) is never torn within a flow; once the writers stop, it
// equals the brute force over the reports.
TEST_F(FlowStateManagerTest, ConcurrentRangeReadsDecodeAndSettleExact) {
  std::atomic<bool> done{false};
  // The writers start once the reader runs: they race it, rather than
  // finishing before it was scheduled.
  absl::Notification reading;
  std::vector<std::thread> writers;
  for (int t = 0; t < 3; ++t) {
    writers.emplace_back([&, t] {
      reading.WaitForNotification();
      for (int i = 0; i < 2000; ++i) {
        const uint32_t flow = static_cast<uint32_t>((t * 7 + i) % 3000);
        EXPECT_TRUE(
            manager_.Merge(i % 13, Report({{flow, uint64_t(i), i}})).ok());
        if (t == 0 && i % 500 == 499) manager_.Reset();
      }
    });
  }
  int checked = 0;
  std::thread reader([&] {
    reading.Notify();
    do {
      absl::StatusOr<kv::RangeResponse> r =
          manager_.Range({"__flow/", kv::PrefixEnd("__flow/")});
      ASSERT_TRUE(r.ok());
      for (size_t i = 0; i < r->kvs.size(); ++i) {
        if (i > 0) {
          ASSERT_LT(r->kvs[i - 1].key, r->kvs[i].key);
        }
        absl::StatusOr<FlowStateValue> value = DecodeFlowState(r->kvs[i].value);
        ASSERT_TRUE(value.ok()) << r->kvs[i].key;
        // Every report sets both fields of its flow: so does the max.
        for (const FlowStat& s : value->flows()) {
          ASSERT_EQ(s.fields, kStateSize | kLastExecTime);
        }
      }
      ++checked;
    } while (!done.load());
  });
  for (auto& th : writers) th.join();
  done = true;
  reader.join();
  EXPECT_GT(checked, 0);
  EXPECT_EQ(testing::CheckAggregate(manager_), "");
}

// Merges racing with resets: afterwards, the aggregate equals exactly what the
// node keys that survived say.
TEST_F(FlowStateManagerTest, MergesRacingResetsLeaveConsistentState) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 300; ++i) {
        EXPECT_TRUE(
            manager_
                .Merge(t, Report({{static_cast<uint32_t>(t * 1000 + i % 7),
                                   static_cast<uint64_t>(i), i}}))
                .ok());
      }
    });
  }
  threads.emplace_back([&] {
    for (int i = 0; i < 30; ++i) manager_.Reset();
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
      all.SetStateSize(s.flow_id, s.state_size)
          .SetLastExecTime(s.flow_id, s.last_exec_time);
    }
  }
  EXPECT_EQ(GetValue(), std::move(all).Build());
}

}  // namespace
}  // namespace metasrv::core
