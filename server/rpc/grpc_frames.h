// gRPC's framing over HTTP/2 (shared/PROTOCOL.md §5), as plain functions
// and one assembler: what a server that speaks HTTP/2 itself needs to read
// messages out of DATA frames and to write headers and trailers. No HTTP/2
// and no gRPC library here.
#ifndef METASRV_SERVER_RPC_GRPC_FRAMES_H_
#define METASRV_SERVER_RPC_GRPC_FRAMES_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace metasrv::server {

// The 5-byte prefix of every message: a compressed flag, then the length.
inline constexpr size_t kMessagePrefixBytes = 5;

// Reads length-prefixed messages out of a request's DATA, however the
// client cut them into frames. Not thread-safe (one per stream).
class MessageAssembler {
 public:
  // Refuses a message longer than `max_bytes` as soon as its prefix says so,
  // before any of it is held.
  explicit MessageAssembler(size_t max_bytes) : max_bytes_(max_bytes) {}

  // Takes `data` and calls `emit(compressed, message)` for each message it
  // completes. RESOURCE_EXHAUSTED for a message over the limit, INTERNAL
  // for a flag other than 0 or 1; after an error, feed no more.
  absl::Status Feed(absl::string_view data,
                    absl::FunctionRef<void(bool, std::string)> emit);
  // Whether part of a message is held: a stream that ends now ends
  // mid-message (INTERNAL).
  bool mid_message() const { return have_ != 0; }
  // Bytes held for the message being read.
  size_t held() const { return body_.capacity(); }

 private:
  const size_t max_bytes_;                 // As given.
  char prefix_[kMessagePrefixBytes] = {};  // The prefix being read.
  size_t have_ = 0;  // Bytes of the current message read, prefix included.
  size_t length_ = 0;  // Its length, once the prefix is whole.
  std::string body_;   // Its bytes so far.
};

// Writes the prefix of a message of `length` bytes to `out` (5 bytes).
void WriteMessagePrefix(bool compressed, uint32_t length, char* out);

// A `grpc-timeout` value: at most 8 digits and a unit (H, M, S, m, u, n).
// nullopt when it is not one.
std::optional<absl::Duration> ParseGrpcTimeout(absl::string_view value);

// `grpc-message` as the protocol carries it: bytes outside 0x20-0x7E, and
// '%', as %XX.
std::string PercentEncode(absl::string_view text);

}  // namespace metasrv::server

#endif  // METASRV_SERVER_RPC_GRPC_FRAMES_H_
