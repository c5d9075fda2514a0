#include "server/codec/full_state_reply.h"

#include <grpcpp/support/slice.h>

#include <utility>

namespace metasrv::server {

bool FullStateReply::Same(const Entry& entry, const EncodedFlowState& state) {
  if (entry.found != state.found ||
      entry.chunks.size() != state.chunks.size()) {
    return false;
  }
  for (size_t i = 0; i < entry.chunks.size(); ++i) {
    if (entry.chunks[i] != state.chunks[i]) return false;
  }
  return true;
}

grpc::ByteBuffer FullStateReply::Get(const EncodedFlowState& state,
                                     bool with_nodes) {
  const int slot = with_nodes ? 1 : 0;
  std::shared_ptr<const Entry> last;
  {
    absl::MutexLock lock(&mu_);
    last = entries_[slot];
  }
  const bool again = last != nullptr && Same(*last, state);
  if (again && last->flat) return last->bytes;
  grpc::ByteBuffer pieces = ToByteBuffer(state);
  auto made = std::make_shared<Entry>();
  made->found = state.found;
  made->chunks = state.chunks;
  grpc::Slice whole;
  // A state read a second time is worth one slice (one copy of its bytes);
  // one read once, as a state that changes between reads is, is not.
  if (again && pieces.DumpToSingleSlice(&whole).ok()) {
    made->bytes = grpc::ByteBuffer(&whole, 1);
    made->flat = true;
  }
  grpc::ByteBuffer out = made->flat ? made->bytes : pieces;
  absl::MutexLock lock(&mu_);
  entries_[slot] = std::move(made);
  return out;
}

}  // namespace metasrv::server
