// Turns the bytes of a request, as gRPC hands them to a raw method, into a
// protobuf message, whatever compression the client used.
//
// GreptimeDB's meta client compresses every request with zstd
// (`grpc-encoding: zstd`, compressed flag set). Debian's gRPC (1.51) knows
// identity, deflate and gzip only: it inflates those itself, but for zstd it
// drops the `grpc-encoding` header and passes the still-compressed bytes on.
// So every method of our services takes raw bytes, and this decoder
// recognises a zstd frame by its magic number, inflates it within a bound and
// parses the result. See docs/DESIGN.md, "Compressed requests".
#ifndef METASRV_SERVER_RPC_GRPC151_ZSTD_REQUESTS_H_
#define METASRV_SERVER_RPC_GRPC151_ZSTD_REQUESTS_H_

#include <google/protobuf/message_lite.h>
#include <grpc/grpc.h>
#include <grpcpp/support/byte_buffer.h>

#include <cstddef>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace metasrv::server {

// Whether `raw` starts with the zstd frame magic number (28 b5 2f fd). No
// request of ours starts with those bytes uncompressed: as protobuf they
// would open with a varint field 5, which only RangeRequest has (keys_only),
// and it is never serialized first in a valid request.
bool IsZstdFrame(const grpc::ByteBuffer& raw);

// Parses `raw` into `message` (which should be empty). A zstd frame (or
// several, concatenated) is inflated first.
// - OK: `message` holds the request.
// - kResourceExhausted: the frame inflates to more than `max_bytes`; found
//   out before more than `max_bytes` are held, whatever the frame claims.
// - kInvalidArgument: a corrupt or truncated frame, or bytes that do not
//   parse as `message`: "malformed T: the bytes do not parse as P.T", where
//   P.T is `type` (default: the message's own type name).
// `raw` is only read. Thread-safe: each thread keeps its own inflater.
absl::Status DecodeRequest(grpc::ByteBuffer* raw, size_t max_bytes,
                           google::protobuf::MessageLite* message,
                           absl::string_view type = {});
// The same for a message's bytes as the nghttp2 transport reads them.
absl::Status DecodeRequest(absl::string_view raw, size_t max_bytes,
                           google::protobuf::MessageLite* message,
                           absl::string_view type = {});
// The same for the bytes of a core batch's receive (null: no bytes).
absl::Status DecodeRequest(grpc_byte_buffer* raw, size_t max_bytes,
                           google::protobuf::MessageLite* message,
                           absl::string_view type = {});

}  // namespace metasrv::server

#endif  // METASRV_SERVER_RPC_GRPC151_ZSTD_REQUESTS_H_
