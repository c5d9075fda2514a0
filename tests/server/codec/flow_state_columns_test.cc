// GetFlowState's cached columns: the chunks, sent as they are, parse to the
// same message the field-by-field build gives, for every kind of value.
#include "server/codec/flow_state_columns.h"

#include <random>
#include <string>

#include "gtest/gtest.h"
#include "server/codec/flow_state_response.h"

namespace metasrv::server {
namespace {

metasrv::v1::GetFlowStateResponse Parse(const SharedPieces& pieces) {
  std::string bytes;
  for (const SharedBytes& p : pieces) bytes.append(p.bytes.data(), p.bytes.size());
  metasrv::v1::GetFlowStateResponse out;
  EXPECT_TRUE(out.ParseFromString(bytes));
  return out;
}

metasrv::v1::GetFlowStateResponse Built(const core::FlowStateManager& m,
                                        bool with_nodes) {
  metasrv::v1::GetFlowStateResponse out;
  EXPECT_TRUE(FillFlowState(m, {}, with_nodes, &out).ok());
  return out;
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
