// FlowAggregate's encodings: built chunk by chunk, cached per chunk and slot,
// and after a change only the changed chunk is encoded again.
#include "core/flow_aggregate.h"

#include <string>
#include <vector>

#include "core/flow_state_codec.h"
#include "gtest/gtest.h"
#include "tests/core/brute_force.h"

namespace metasrv::core {
namespace {

using testing::Report;

// Counts its calls; encodes the flow ids.
int encoder_calls = 0;
std::string CountingEncoder(absl::Span<const AggregateFlow> flows) {
  ++encoder_calls;
  std::string out;
  for (const AggregateFlow& f : flows) out += std::to_string(f.stat.flow_id) + ",";
  return out;
}

class FlowAggregateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Three chunks: flows 0-9, 1024-1033 and 5000-5009, on node 1.
    for (uint32_t base : {0u, 1024u, 5000u}) {
      for (uint32_t i = 0; i < 10; ++i) {
        FlowStateValue::Builder b;
        b.SetStateSize(base + i, base + i + 1).SetLastExecTime(base + i, -5);
        reports_.push_back(b.Build());
      }
    }
    FlowStateValue::Builder all;
    for (const FlowStateValue& r : reports_) all.Set(r.flows()[0]);
    report_ = all.Build();
    aggregate_.Replace(1, FlowStateValue(), report_);
  }

  // Encodes into slot 1 and returns which pieces had to be encoded.
  std::vector<uint32_t> EncodedChunks() {
    FlowAggregate::EncodingPlan plan = aggregate_.PlanEncoding(1);
    std::vector<uint32_t> missing;
    for (const auto& piece : plan.pieces) {
      if (piece.bytes == nullptr) missing.push_back(piece.chunk_id);
    }
    FlowAggregate::Encode(&plan, &CountingEncoder);
    aggregate_.CacheEncoding(plan);
    return missing;
  }

  std::vector<FlowStateValue> reports_;
  FlowStateValue report_;
  FlowAggregate aggregate_;
};

TEST_F(FlowAggregateTest, OnlyTheChangedChunkIsEncodedAgain) {
  EXPECT_EQ(EncodedChunks(), (std::vector<uint32_t>{0, 1, 4}));
  EXPECT_TRUE(EncodedChunks().empty());  // Nothing changed: all cached.
  // One flow of the second chunk changes.
  FlowStateValue changed = report_;
  FlowStateValue::Builder b;
  for (const FlowStat& s : report_.flows()) {
    FlowStat t = s;
    if (t.flow_id == 1030) t.state_size = 99;
    b.Set(t);
  }
  changed = b.Build();
  aggregate_.Replace(1, report_, changed);
  encoder_calls = 0;
  EXPECT_EQ(EncodedChunks(), (std::vector<uint32_t>{1}));
  EXPECT_EQ(encoder_calls, 1);
}

TEST_F(FlowAggregateTest, SlotsAreIndependentAndJsonIsByteExact) {
  EXPECT_EQ(EncodedChunks().size(), 3u);
  // The JSON slot was never filled: its first read encodes every chunk, and
  // the bytes equal the whole value's encoding.
  FlowAggregate::EncodingPlan json =
      aggregate_.PlanEncoding(FlowAggregate::kJsonSlot);
  for (const auto& piece : json.pieces) EXPECT_EQ(piece.bytes, nullptr);
  EXPECT_EQ(aggregate_.EncodeJson(), EncodeFlowState(report_));
  for (const auto& piece :
       aggregate_.PlanEncoding(FlowAggregate::kJsonSlot).pieces) {
    EXPECT_NE(piece.bytes, nullptr);
  }
  EXPECT_EQ(aggregate_.EncodeJson(), EncodeFlowState(report_));
}

TEST_F(FlowAggregateTest, ACacheFromBeforeAChangeIsNotKept) {
  FlowAggregate::EncodingPlan plan = aggregate_.PlanEncoding(1);
  // The chunk changes between planning and caching.
  aggregate_.Replace(2, FlowStateValue(), Report({{3, 1, 1}}));
  FlowAggregate::Encode(&plan, &CountingEncoder);
  aggregate_.CacheEncoding(plan);
  EXPECT_EQ(EncodedChunks(), (std::vector<uint32_t>{0}));
}

}  // namespace
}  // namespace metasrv::core
