// GetFlowState's answer for every flow, as one serialized buffer kept while
// the state stays as it is: an unchanged state is answered by sharing those
// bytes (one piece, no copy, nothing encoded), as a bare server would answer
// with a prebuilt reply.
#ifndef METASRV_SERVER_CODEC_FULL_STATE_REPLY_H_
#define METASRV_SERVER_CODEC_FULL_STATE_REPLY_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "server/codec/flow_state_columns.h"

namespace metasrv::server {

// Remembers the last answer per encoding (with or without the node columns)
// and the chunk encodings it was made of. The chunks' cached bytes identify a
// state exactly: a chunk that changes gets new bytes (the old ones stay alive
// while remembered here, so their address is not reused). So an answer
// shared is always the answer of the one instant the chunks were read at.
//
// Thread safety: safe from any thread. The lock is held only to compare and
// swap; copying into the buffer runs without it.
class FullStateReply {
 public:
  // The serialized GetFlowStateResponse of `state`: the remembered bytes when
  // `state` is the one they were made of. A state seen for the first time is
  // answered with its chunks' bytes as they are (no copy) and remembered; at
  // its second read its answer is made into one piece and kept.
  SharedPieces Get(const EncodedFlowState& state, bool with_nodes)
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // One answer and what it was made of.
  struct Entry {
    bool found = false;  // EncodedFlowState::found.
    std::vector<std::shared_ptr<const std::string>> chunks;  // Its chunks.
    bool flat = false;   // Whether `bytes` holds the answer.
    SharedPieces bytes;  // The answer as one piece, once read twice.
  };
  static bool Same(const Entry& entry, const EncodedFlowState& state);

  absl::Mutex mu_;  // Guards the entries.
  // Per encoding: [0] the columns, [1] with the node columns.
  std::shared_ptr<const Entry> entries_[2] ABSL_GUARDED_BY(mu_);
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_CODEC_FULL_STATE_REPLY_H_
