// The all-flows answer kept while the state stays: the same bytes as the
// chunks give, one piece from the second read of a state, and never the
// answer of another state.
#include "server/codec/full_state_reply.h"

#include <zstd.h>

#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "server/codec/flow_state_columns.h"
#include "server/rpc/answer_encoding.h"

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

std::string Unzstd(const SharedPieces& pieces) {
  const std::string frame = Bytes(pieces);
  const unsigned long long size =
      ZSTD_getFrameContentSize(frame.data(), frame.size());
  EXPECT_NE(size, ZSTD_CONTENTSIZE_UNKNOWN);
  EXPECT_NE(size, ZSTD_CONTENTSIZE_ERROR);
  std::string out(size, '\0');
  const size_t made =
      ZSTD_decompress(out.data(), out.size(), frame.data(), frame.size());
  EXPECT_FALSE(ZSTD_isError(made)) << ZSTD_getErrorName(made);
  out.resize(made);
  return out;
}

// Flows enough for an answer past kCompressFromBytes.
void ReportMany(core::FlowStateManager* manager, uint64_t node, uint64_t size) {
  core::FlowStateValue::Builder b;
  for (uint32_t id = 0; id < 3000; ++id) b.SetStateSize(id, size + id % 7);
  ASSERT_TRUE(manager->Merge(node, b.Build()).ok());
}

TEST(FullStateReplyTest, ZstdOncePerStateSharedAndAlwaysThePlainBytes) {
  core::FlowStateManager manager;
  FullStateReply reply;
  ReportMany(&manager, 1, 10);
  for (bool with_nodes : {false, true}) {
    const EncodedFlowState state = EncodeFlowStateColumns(manager, with_nodes);
    const std::string plain = Bytes(ToPieces(state));
    ASSERT_GT(plain.size(), kCompressFromBytes);
    // A loop thread may not compress: not made yet, nothing to share.
    EXPECT_FALSE(reply.GetZstd(state, with_nodes, false).has_value());
    std::optional<CompressedAnswer> first = reply.GetZstd(state, with_nodes, true);
    ASSERT_TRUE(first.has_value());
    ASSERT_EQ(first->compression, Compression::kZstd);
    ASSERT_EQ(first->bytes.size(), 1u);
    EXPECT_LT(first->bytes[0].bytes.size(), plain.size());
    EXPECT_EQ(Unzstd(first->bytes), plain);
    // Later reads of the same state share the same bytes, on any thread;
    // a plain read in between keeps them.
    EXPECT_EQ(Bytes(reply.Get(state, with_nodes)), plain);
    EXPECT_EQ(Bytes(reply.Get(state, with_nodes)), plain);
    std::optional<CompressedAnswer> again = reply.GetZstd(
        EncodeFlowStateColumns(manager, with_nodes), with_nodes, false);
    ASSERT_TRUE(again.has_value());
    EXPECT_EQ(again->bytes[0].bytes.data(), first->bytes[0].bytes.data());
  }
  // A changed state is compressed anew: never the old state's answer.
  ReportMany(&manager, 2, 1000);
  const EncodedFlowState changed = EncodeFlowStateColumns(manager, false);
  EXPECT_FALSE(reply.GetZstd(changed, false, false).has_value());
  std::optional<CompressedAnswer> now = reply.GetZstd(changed, false, true);
  ASSERT_TRUE(now.has_value());
  EXPECT_EQ(Unzstd(now->bytes), Bytes(ToPieces(changed)));
}

TEST(FullStateReplyTest, SmallAnswersStayPlain) {
  core::FlowStateManager manager;
  FullStateReply reply;
  Report(&manager, 1, 10);  // Three flows: tens of bytes.
  const EncodedFlowState state = EncodeFlowStateColumns(manager, false);
  std::optional<CompressedAnswer> answer = reply.GetZstd(state, false, true);
  ASSERT_TRUE(answer.has_value());
  EXPECT_EQ(answer->compression, Compression::kNone);
  EXPECT_EQ(Bytes(answer->bytes), Bytes(ToPieces(state)));
  // Known now: answered on any thread.
  EXPECT_TRUE(reply.GetZstd(state, false, false).has_value());
}

TEST(FullStateReplyTest, ReadersOfOneStateCompressItOnce) {
  core::FlowStateManager manager;
  FullStateReply reply;
  ReportMany(&manager, 1, 10);
  const EncodedFlowState state = EncodeFlowStateColumns(manager, false);
  std::vector<const char*> seen(8);
  std::vector<std::thread> readers;
  for (int i = 0; i < 8; ++i) {
    readers.emplace_back([&, i] {
      seen[i] = reply.GetZstd(state, false, true)->bytes[0].bytes.data();
    });
  }
  for (std::thread& t : readers) t.join();
  for (const char* p : seen) EXPECT_EQ(p, seen[0]);
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
