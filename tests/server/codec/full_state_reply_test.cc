// The all-flows answer kept while the state stays: the same bytes as the
// chunks give, one piece from the second read of a state, and never the
// answer of another state.
#include "server/codec/full_state_reply.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "server/codec/flow_state_columns.h"

namespace metasrv::server {
namespace {

std::string Bytes(const SharedPieces& pieces) {
  std::string out;
  for (const SharedBytes& p : pieces) out.append(p.bytes.data(), p.bytes.size());
  return out;
}

void Report(core::FlowStateManager* manager, uint64_t node, uint64_t size) {
  core::FlowStateValue::Builder b;
  // Flows in three chunks.
  for (uint32_t id : {1u, 2000u, 5000u}) b.SetStateSize(id, size + id);
  ASSERT_TRUE(manager->Merge(node, b.Build()).ok());
}

TEST(FullStateReplyTest, SharesOnePieceWhileTheStateStaysAndNeverAnother) {
  core::FlowStateManager manager;
  FullStateReply reply;
  for (bool with_nodes : {false, true}) {
    // No state: the answer is empty, cached or not.
    EXPECT_EQ(Bytes(reply.Get(EncodeFlowStateColumns(manager, with_nodes),
                              with_nodes)),
              "");
  }
  Report(&manager, 1, 10);
  for (bool with_nodes : {false, true}) {
    const EncodedFlowState state = EncodeFlowStateColumns(manager, with_nodes);
    const std::string expected = Bytes(ToPieces(state));
    ASSERT_GT(expected.size(), 10u);
    // First read: the chunks as they are (the found field, three chunks).
    const SharedPieces first = reply.Get(state, with_nodes);
    EXPECT_EQ(Bytes(first), expected);
    EXPECT_EQ(first.size(), 4u);
    // Second and later reads of the same state: one piece, same bytes.
    for (int i = 0; i < 3; ++i) {
      const SharedPieces again =
          reply.Get(EncodeFlowStateColumns(manager, with_nodes), with_nodes);
      EXPECT_EQ(Bytes(again), expected);
      EXPECT_EQ(again.size(), 1u);
    }
  }
  // One chunk changes: the answer is the new state's, at once.
  const std::string before =
      Bytes(ToPieces(EncodeFlowStateColumns(manager, false)));
  Report(&manager, 2, 100);
  const EncodedFlowState changed = EncodeFlowStateColumns(manager, false);
  const std::string after = Bytes(ToPieces(changed));
  ASSERT_NE(after, before);
  EXPECT_EQ(Bytes(reply.Get(changed, false)), after);
  EXPECT_EQ(Bytes(reply.Get(changed, false)), after);
  // The other encoding's entry is its own.
  const EncodedFlowState nodes = EncodeFlowStateColumns(manager, true);
  EXPECT_EQ(Bytes(reply.Get(nodes, true)), Bytes(ToPieces(nodes)));
  // A reset: no state, an empty answer.
  manager.Reset();
  EXPECT_EQ(Bytes(reply.Get(EncodeFlowStateColumns(manager, false), false)),
            "");
}

TEST(FullStateReplyTest, CachedColumnsOnlyWhenNothingNeedsEncoding) {
  core::FlowStateManager manager;
  // No state: nothing to encode, the empty answer.
  std::optional<EncodedFlowState> none = CachedFlowStateColumns(manager, false);
  ASSERT_TRUE(none.has_value());
  EXPECT_FALSE(none->found);
  Report(&manager, 1, 10);
  // Not encoded yet: not answerable from the cache.
  EXPECT_FALSE(CachedFlowStateColumns(manager, false).has_value());
  const EncodedFlowState encoded = EncodeFlowStateColumns(manager, false);
  std::optional<EncodedFlowState> cached =
      CachedFlowStateColumns(manager, false);
  ASSERT_TRUE(cached.has_value());
  EXPECT_EQ(cached->chunks, encoded.chunks);
  // The node columns are another encoding, not made yet.
  EXPECT_FALSE(CachedFlowStateColumns(manager, true).has_value());
  // A change needs its chunk encoded again.
  Report(&manager, 1, 20);
  EXPECT_FALSE(CachedFlowStateColumns(manager, false).has_value());
}

}  // namespace
}  // namespace metasrv::server
