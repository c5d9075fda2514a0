// FlowAggregate's views: a snapshot is one instant and stays so while it is
// held; encodings are cached per view, and after a change only the changed
// chunk is encoded again.
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
  for (const AggregateFlow& f : flows) {
    out += std::to_string(f.stat.flow_id) + ":" +
           std::to_string(f.stat.state_size) + ",";
  }
  return out;
}

class FlowAggregateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Three chunks: flows 0-9, 1024-1033 and 5000-5009, on node 1.
    FlowStateValue::Builder all;
    for (uint32_t base : {0u, 1024u, 5000u}) {
      for (uint32_t i = 0; i < 10; ++i) {
        all.SetStateSize(base + i, base + i + 1).SetLastExecTime(base + i, -5);
      }
    }
    report_ = all.Build();
    aggregate_.Replace(1, FlowStateValue(), report_);
    encoder_calls = 0;
  }

  // Encodes a snapshot in the columns encoding; returns the encoder calls.
  int EncodeAll() {
    const int before = encoder_calls;
    for (const PinnedChunk& chunk : aggregate_.Snapshot()) {
      chunk->Encoded(ChunkEncoding::kReaderSlot1, &CountingEncoder);
    }
    return encoder_calls - before;
  }

  // report_ with flow `id`'s state size set to `size`.
  FlowStateValue With(uint32_t id, uint64_t size) const {
    FlowStateValue::Builder b;
    for (FlowStat s : report_.flows()) {
      if (s.flow_id == id) s.state_size = size;
      b.Set(s);
    }
    return b.Build();
  }

  FlowStateValue report_;
  FlowAggregate aggregate_;
};

TEST_F(FlowAggregateTest, SnapshotHoldsEveryNonEmptyChunkInOrder) {
  std::vector<PinnedChunk> chunks = aggregate_.Snapshot();
  ASSERT_EQ(chunks.size(), 3u);
  EXPECT_EQ(chunks[0]->chunk_id(), 0u);
  EXPECT_EQ(chunks[1]->chunk_id(), 1u);
  EXPECT_EQ(chunks[2]->chunk_id(), 4u);
  EXPECT_EQ(FlowAggregate::Select(chunks, {}).size(), 30u);
  EXPECT_EQ(FlowAggregate::Select(chunks, {3, 1030, 2000, 5009}).size(), 3u);
  EXPECT_EQ(aggregate_.Snapshot(std::vector<uint32_t>{3, 7, 5001}).size(), 2u);
  EXPECT_EQ(aggregate_.CountPresent({3, 1030, 2000, 5009}), 3u);
}

TEST_F(FlowAggregateTest, OnlyTheChangedChunkIsEncodedAgain) {
  EXPECT_EQ(EncodeAll(), 3);
  EXPECT_EQ(EncodeAll(), 0);  // Nothing changed: all cached.
  aggregate_.Replace(1, report_, With(1030, 99));
  EXPECT_EQ(EncodeAll(), 1);
  EXPECT_EQ(EncodeAll(), 0);
}

TEST_F(FlowAggregateTest, EncodingsAreIndependentAndJsonIsByteExact) {
  EXPECT_EQ(EncodeAll(), 3);
  EXPECT_EQ(FlowAggregate::EncodeJson(aggregate_.Snapshot()),
            EncodeFlowState(report_));
  EXPECT_EQ(EncodeAll(), 0);  // The JSON did not replace the columns.
}

TEST_F(FlowAggregateTest, AHeldSnapshotNeverChanges) {
  std::vector<PinnedChunk> before = aggregate_.Snapshot();
  const uint64_t version = before[1]->version();
  const std::string bytes =
      *before[1]->Encoded(ChunkEncoding::kReaderSlot1, &CountingEncoder);
  // Flows in two chunks change, one is added in a new chunk, one chunk
  // empties: the held views keep the old instant.
  FlowStateValue::Builder b;
  for (FlowStat s : report_.flows()) {
    if (s.flow_id >= 5000) continue;
    if (s.flow_id == 3 || s.flow_id == 1030) s.state_size = 7;
    b.Set(s);
  }
  b.SetStateSize(9000, 1);
  const FlowStateValue next = b.Build();
  aggregate_.Replace(1, report_, next);
  EXPECT_EQ(before[1]->version(), version);
  EXPECT_EQ(*before[1]->Encoded(ChunkEncoding::kReaderSlot1, &CountingEncoder),
            bytes);
  EXPECT_EQ(FlowAggregate::Select(before, {}).size(), 30u);
  EXPECT_EQ(FlowAggregate::EncodeJson(before), EncodeFlowState(report_));
  // A new snapshot is the new instant.
  std::vector<PinnedChunk> after = aggregate_.Snapshot();
  ASSERT_EQ(after.size(), 3u);
  EXPECT_EQ(after[2]->chunk_id(), 8u);
  EXPECT_NE(after[1]->version(), version);
  EXPECT_EQ(FlowAggregate::EncodeJson(after), EncodeFlowState(next));
}

TEST_F(FlowAggregateTest, AnUnheldViewChangesInPlaceWithANewVersion) {
  uint64_t version = 0;
  const ChunkView* address = nullptr;
  {
    std::vector<PinnedChunk> chunks = aggregate_.Snapshot();
    version = chunks[0]->version();
    address = &*chunks[0];
    chunks[0]->Encoded(ChunkEncoding::kReaderSlot1, &CountingEncoder);
  }
  aggregate_.Replace(1, report_, With(3, 42));
  std::vector<PinnedChunk> chunks = aggregate_.Snapshot();
  EXPECT_EQ(&*chunks[0], address);  // Nobody held it: no copy.
  EXPECT_NE(chunks[0]->version(), version);
  // Its cached encoding was dropped with the change.
  EXPECT_NE(chunks[0]
                ->Encoded(ChunkEncoding::kReaderSlot1, &CountingEncoder)
                ->find("3:42,"),
            std::string::npos);
}

}  // namespace
}  // namespace metasrv::core
