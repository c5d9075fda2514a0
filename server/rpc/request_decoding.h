// Turns the bytes of a request message into a protobuf message, whatever
// compression the client used.
//
// GreptimeDB's meta client compresses every request with zstd
// (`grpc-encoding: zstd`, compressed flag set); other clients send
// identity. Every method of our services takes the message's bytes, and
// this decoder recognises a zstd frame by its magic number, inflates it
// within a bound and parses the result. See docs/DESIGN.md, "Compressed
// requests".
#ifndef METASRV_SERVER_RPC_REQUEST_DECODING_H_
#define METASRV_SERVER_RPC_REQUEST_DECODING_H_

#include <google/protobuf/message_lite.h>

#include <cstddef>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace metasrv::server {

// Whether `raw` starts with the zstd frame magic number (28 b5 2f fd). No
// request of ours starts with those bytes uncompressed: as protobuf they
// would open with a varint field 5, which only RangeRequest has (keys_only),
// and it is never serialized first in a valid request.
bool IsZstdFrame(absl::string_view raw);

// Parses `raw` into `message` (which should be empty). A zstd frame (or
// several, concatenated) is inflated first.
// - OK: `message` holds the request.
// - kResourceExhausted: the frame inflates to more than `max_bytes`; found
//   out before more than `max_bytes` are held, whatever the frame claims.
// - kInvalidArgument: a corrupt or truncated frame, or bytes that do not
//   parse as `message`: "malformed T: the bytes do not parse as P.T", where
//   P.T is `type` (default: the message's own type name).
// `raw` is only read. Thread-safe: each thread keeps its own inflater.
absl::Status DecodeRequest(absl::string_view raw, size_t max_bytes,
                           google::protobuf::MessageLite* message,
                           absl::string_view type = {});

}  // namespace metasrv::server

#endif  // METASRV_SERVER_RPC_REQUEST_DECODING_H_
