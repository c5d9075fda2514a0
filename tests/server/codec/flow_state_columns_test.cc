// GetFlowState's columns, the one encoder of its answer: the chunks, cached
// or not, sent as they are, parse to the same message protobuf's
// field-by-field build gives, for every kind of value.
#include "server/codec/flow_state_columns.h"

#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "metasrv/v1/metasrv.pb.h"
#include "tests/server/codec/built_flow_state.h"

namespace metasrv::server {
namespace {

metasrv::v1::GetFlowStateResponse Parse(const SharedPieces& pieces) {
  std::string bytes;
  for (const SharedBytes& p : pieces) bytes.append(p.bytes.data(), p.bytes.size());
  metasrv::v1::GetFlowStateResponse out;
  EXPECT_TRUE(out.ParseFromString(bytes));
  return out;
}

// The reference: the answer built field by field through protobuf.
metasrv::v1::GetFlowStateResponse Built(const core::FlowStateManager& m,
                                        bool with_nodes,
                                        absl::Span<const uint32_t> ids = {}) {
  return BuiltFlowState(m, with_nodes, ids);
}

TEST(FlowStateColumnsTest, CachedChunksParseToTheBuiltMessage) {
  core::FlowStateManager manager;
  for (bool with_nodes : {false, true}) {
    EXPECT_EQ(Parse(ToPieces(EncodeFlowStateColumns(manager, with_nodes)))
                  .SerializeAsString(),
              Built(manager, with_nodes).SerializeAsString());
  }
  std::mt19937 rng(7);
  for (int node = 0; node < 40; ++node) {
    core::FlowStateValue::Builder b;
    for (int i = 0; i < 100; ++i) {
      const uint32_t id = rng() % 5000 + (i == 0 ? 4294967000u : 0);
      if (rng() % 3 != 0) b.SetStateSize(id, rng() % 100000 + (uint64_t{1} << 40));
      if (rng() % 3 != 0) b.SetLastExecTime(id, static_cast<int64_t>(rng() % 200) - 100);
      if (rng() % 4 == 0) b.SetStartTime(id, rng());
    }
    ASSERT_TRUE(manager.Merge(node * 1000003u, b.Build()).ok());
  }
  for (int round = 0; round < 2; ++round) {  // Cold, then cached.
    for (bool with_nodes : {false, true}) {
      EncodedFlowState state = EncodeFlowStateColumns(manager, with_nodes);
      metasrv::v1::GetFlowStateResponse parsed = Parse(ToPieces(state));
      metasrv::v1::GetFlowStateResponse built = Built(manager, with_nodes);
      EXPECT_TRUE(parsed.found());
      EXPECT_GT(parsed.flow_ids_size(), 2000);
      // Re-serialized, protobuf writes each column as one run: equal bytes
      // mean equal messages.
      EXPECT_EQ(parsed.SerializeAsString(), built.SerializeAsString());
      EXPECT_EQ(state.size(), LengthOf(ToPieces(state)));
    }
  }
}

// Some flows (unknown, repeated and out-of-order ids among them) are encoded
// alike, uncached.
TEST(FlowStateColumnsTest, SelectedFlowsParseToTheBuiltMessage) {
  core::FlowStateManager manager;
  const std::vector<uint32_t> none = {1, 2};
  for (bool with_nodes : {false, true}) {
    EXPECT_EQ(Parse(ToPieces(EncodeFlowStateColumns(manager, none, with_nodes)))
                  .SerializeAsString(),
              Built(manager, with_nodes, none).SerializeAsString());
  }
  std::mt19937 rng(11);
  for (int node = 0; node < 10; ++node) {
    core::FlowStateValue::Builder b;
    for (int i = 0; i < 300; ++i) {
      const uint32_t id = rng() % 3000;
      b.SetStateSize(id, rng() % 100000 + (uint64_t{1} << 33));
      if (rng() % 2 != 0) b.SetLastExecTime(id, static_cast<int64_t>(rng() % 200) - 100);
      if (rng() % 4 == 0) b.SetStartTime(id, rng());
    }
    ASSERT_TRUE(manager.Merge(node + 1, b.Build()).ok());
  }
  std::vector<uint32_t> ids;
  for (int i = 0; i < 500; ++i) ids.push_back(rng() % 4000);
  ids.push_back(ids[0]);
  for (bool with_nodes : {false, true}) {
    for (absl::Span<const uint32_t> asked :
         {absl::Span<const uint32_t>(ids), absl::Span<const uint32_t>()}) {
      metasrv::v1::GetFlowStateResponse parsed = Parse(
          ToPieces(EncodeFlowStateColumns(manager, asked, with_nodes)));
      EXPECT_TRUE(parsed.found());
      EXPECT_GT(parsed.flow_ids_size(), asked.empty() ? 1500 : 100);
      EXPECT_EQ(parsed.SerializeAsString(),
                Built(manager, with_nodes, asked).SerializeAsString());
    }
  }
}

TEST(FlowStateColumnsTest, UnchangedChunksAreTheSameBytesNotACopy) {
  core::FlowStateManager manager;
  core::FlowStateValue::Builder b;
  for (uint32_t id = 0; id < 3000; ++id) b.SetStateSize(id, id);
  ASSERT_TRUE(manager.Merge(1, b.Build()).ok());
  EncodedFlowState first = EncodeFlowStateColumns(manager, false);
  ASSERT_EQ(first.chunks.size(), 3u);
  ASSERT_TRUE(manager.Merge(2, core::FlowStateValue::Builder()
                                   .SetStateSize(1500, 1)
                                   .Build())
                  .ok());
  EncodedFlowState second = EncodeFlowStateColumns(manager, false);
  ASSERT_EQ(second.chunks.size(), 3u);
  EXPECT_EQ(second.chunks[0].get(), first.chunks[0].get());
  EXPECT_NE(second.chunks[1].get(), first.chunks[1].get());
  EXPECT_EQ(second.chunks[2].get(), first.chunks[2].get());
}

}  // namespace
}  // namespace metasrv::server
