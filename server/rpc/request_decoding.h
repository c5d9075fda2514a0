// Turns the bytes of a request message into a protobuf message, inflated
// as its compressed flag and the call's grpc-encoding say.
//
// GreptimeDB's meta client compresses every request with zstd
// (`grpc-encoding: zstd`, compressed flag set); grpc-go, grpc-js and grpcio
// offer gzip; others send identity. The flag and the encoding decide, never
// the bytes: flag 0 is parsed as it is, flag 1 inflated by the named
// encoding within a bound. See docs/DESIGN.md, "Compressed requests".
#ifndef METASRV_SERVER_RPC_REQUEST_DECODING_H_
#define METASRV_SERVER_RPC_REQUEST_DECODING_H_

#include <google/protobuf/message_lite.h>

#include <cstddef>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace metasrv::server {

// How a request message is compressed.
enum class Compression { kNone, kGzip, kZstd };

// What grpc-accept-encoding lists: every encoding DecodeRequest inflates.
inline constexpr absl::string_view kAcceptEncoding = "identity,gzip,zstd";

// The compression a grpc-encoding names ("" and "identity": kNone);
// nullopt for one this server does not inflate.
std::optional<Compression> CompressionNamed(absl::string_view encoding);

// Parses `raw` into `message` (which should be empty), inflated first when
// `compression` says so (a gzip or zstd body may hold several members or
// frames, concatenated).
// - OK: `message` holds the request.
// - kResourceExhausted: the body inflates to more than `max_bytes`; found
//   out before more than `max_bytes` are held, whatever it claims.
// - kInvalidArgument: a corrupt or truncated compressed body ("gzip-
//   compressed request does not inflate: ..."), or bytes that do not parse
//   as `message`: "malformed T: the bytes do not parse as P.T", where P.T
//   is `type` (default: the message's own type name).
// `*inflated`, when given, is set to the bytes inflated (0 for kNone; on an
// error, about as many as were made before it was found).
// `raw` is only read. Thread-safe: each thread keeps its own inflaters.
absl::Status DecodeRequest(absl::string_view raw, Compression compression,
                           size_t max_bytes,
                           google::protobuf::MessageLite* message,
                           absl::string_view type = {},
                           size_t* inflated = nullptr);

}  // namespace metasrv::server

#endif  // METASRV_SERVER_RPC_REQUEST_DECODING_H_
