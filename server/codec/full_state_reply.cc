#include "server/codec/full_state_reply.h"

#include <utility>

#include "server/rpc/answer_encoding.h"

namespace metasrv::server {

FullStateReply::FullStateReply(MakePlain make) : make_(make) {}

SharedPieces FullStateReply::PlainColumns(const EncodedFlowState& state) {
  return ToPieces(state);
}

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

std::shared_ptr<const FullStateReply::Entry> FullStateReply::EntryOf(
    const EncodedFlowState& state, int slot, bool create) {
  absl::MutexLock lock(&mu_);
  std::shared_ptr<const Entry>& last = entries_[slot];
  if (last != nullptr && Same(*last, state)) return last;
  if (!create) return nullptr;
  auto made = std::make_shared<Entry>();
  made->found = state.found;
  made->chunks = state.chunks;
  last = made;
  return made;
}

SharedPieces FullStateReply::Get(const EncodedFlowState& state, bool variant) {
  const std::shared_ptr<const Entry> entry =
      EntryOf(state, variant ? 1 : 0, /*create=*/true);
  // A state read a second time is worth one piece (one copy of its bytes);
  // one read once, as a state that changes between reads is, is not.
  if (entry->plain_reads.fetch_add(1, std::memory_order_relaxed) == 0) {
    return make_(state);
  }
  std::call_once(entry->flat_once, [&] {
    const SharedPieces pieces = make_(state);
    auto whole = std::make_shared<std::string>();
    whole->reserve(LengthOf(pieces));
    for (const SharedBytes& p : pieces) whole->append(p.bytes.data(), p.bytes.size());
    entry->flat = std::move(whole);
  });
  return {SharedBytes::Of(entry->flat)};
}

std::optional<CompressedAnswer> FullStateReply::GetZstd(
    const EncodedFlowState& state, bool variant, bool may_compress) {
  const std::shared_ptr<const Entry> entry =
      EntryOf(state, variant ? 1 : 0, /*create=*/may_compress);
  if (entry == nullptr) return std::nullopt;
  if (!entry->zstd_made.load(std::memory_order_acquire)) {
    if (!may_compress) return std::nullopt;
    std::call_once(entry->zstd_once, [&] {
      entry->zstd = CompressZstd(make_(state));
      entry->zstd_made.store(true, std::memory_order_release);
    });
  }
  if (entry->zstd != nullptr) {
    return CompressedAnswer{{SharedBytes::Of(entry->zstd)}, Compression::kZstd};
  }
  return CompressedAnswer{Get(state, variant), Compression::kNone};
}

}  // namespace metasrv::server
