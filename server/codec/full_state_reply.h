// An all-flows answer (GetFlowState's, or Cluster.Range's of `__flow/state`)
// as serialized bytes kept while the state stays as it is: an unchanged
// state is answered by sharing those bytes (one piece, no copy, nothing
// encoded), as a bare server would answer with a prebuilt reply; and, for a
// client that takes zstd, by the one compressed copy made of that state.
#ifndef METASRV_SERVER_CODEC_FULL_STATE_REPLY_H_
#define METASRV_SERVER_CODEC_FULL_STATE_REPLY_H_

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "server/codec/flow_state_columns.h"
#include "server/rpc/request_decoding.h"

namespace metasrv::server {

// An answer and how its bytes are compressed.
struct CompressedAnswer {
  SharedPieces bytes;
  Compression compression = Compression::kNone;
};

// Remembers the last answer per variant (GetFlowState: with or without the
// node columns) and the chunk encodings it was made of. The chunks' cached
// bytes identify a state exactly: a chunk that changes gets new bytes (the
// old ones stay alive while remembered here, so their address is not
// reused). So an answer shared is always the answer of the one instant the
// chunks were read at.
//
// Thread safety: safe from any thread. The lock is held only to compare and
// swap; copying and compressing run without it, each once per state.
class FullStateReply {
 public:
  // Makes the plain answer of a state (called only for a state not
  // remembered yet); must be deterministic.
  using MakePlain = SharedPieces (*)(const EncodedFlowState& state);
  // Answers made by `make`; by default GetFlowState's (ToPieces).
  explicit FullStateReply(MakePlain make = &PlainColumns);

  // The plain answer of `state`: the remembered bytes when `state` is the
  // one they were made of. A state seen for the first time is answered with
  // what `make` gives (the chunks' bytes, no copy) and remembered; at its
  // second read its answer is made into one piece and kept.
  SharedPieces Get(const EncodedFlowState& state, bool variant)
      ABSL_LOCKS_EXCLUDED(mu_);

  // The answer of `state` for a client that takes zstd: compressed once per
  // state, by the first such read (others of the same state wait for it and
  // share it); plain (Get()) when compressing does not make it smaller
  // (answer_encoding.h). With `may_compress` false (the caller's thread
  // must not spend the CPU: a loop thread), nullopt when the compressed
  // bytes are not made yet.
  std::optional<CompressedAnswer> GetZstd(const EncodedFlowState& state,
                                          bool variant, bool may_compress)
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // One state's answers and what it was made of. Its answers are made at
  // most once each, by the first read that needs them, outside mu_.
  struct Entry {
    bool found = false;  // EncodedFlowState::found.
    std::vector<std::shared_ptr<const std::string>> chunks;  // Its chunks.
    mutable std::atomic<int> plain_reads{0};  // Get() calls so far.
    // The plain answer as one piece, made at its second plain read.
    mutable std::once_flag flat_once;
    mutable std::shared_ptr<const std::string> flat;
    // The zstd answer, made at its first compressed read; null when not
    // smaller than the plain one.
    mutable std::once_flag zstd_once;
    mutable std::atomic<bool> zstd_made{false};
    mutable std::shared_ptr<const std::string> zstd;
  };
  static bool Same(const Entry& entry, const EncodedFlowState& state);
  static SharedPieces PlainColumns(const EncodedFlowState& state);
  // The remembered entry of `state` in `slot`; when there is none, a new
  // one remembered in its place (`create`) or null.
  std::shared_ptr<const Entry> EntryOf(const EncodedFlowState& state,
                                       int slot, bool create)
      ABSL_LOCKS_EXCLUDED(mu_);

  const MakePlain make_;
  absl::Mutex mu_;  // Guards the entries.
  // Per variant: [0] false, [1] true.
  std::shared_ptr<const Entry> entries_[2] ABSL_GUARDED_BY(mu_);
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_CODEC_FULL_STATE_REPLY_H_
