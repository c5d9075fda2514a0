// Bytes shared without copying: what the server's answers are made of, from
// the codecs that build them to the socket's buffer.
#ifndef METASRV_SERVER_RPC_SHARED_BYTES_H_
#define METASRV_SERVER_RPC_SHARED_BYTES_H_

#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"

namespace metasrv::server {

// One piece of an answer's bytes, shared: `bytes` stays valid while `owner`
// lives (a string, a cached encoding). Immutable; thread-safe.
struct SharedBytes {
  std::shared_ptr<const void> owner;
  absl::string_view bytes;
  // The whole of `text`, which the piece keeps alive.
  static SharedBytes Of(std::shared_ptr<const std::string> text) {
    absl::string_view view(*text);
    return {std::move(text), view};
  }
};

// A message's bytes: its pieces, in order.
using SharedPieces = std::vector<SharedBytes>;

// Their length in all.
inline size_t LengthOf(const SharedPieces& pieces) {
  size_t n = 0;
  for (const SharedBytes& p : pieces) n += p.bytes.size();
  return n;
}

}  // namespace metasrv::server

#endif  // METASRV_SERVER_RPC_SHARED_BYTES_H_
