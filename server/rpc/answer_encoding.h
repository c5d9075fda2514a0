// How an answer is compressed: chosen from what the client lists in
// grpc-accept-encoding, made once per cached answer (never per reader).
//
// Upstream's metasrv (tonic, send_compressed gzip and zstd) compresses every
// answer for a client that lists either; GreptimeDB's clients list
// "gzip,zstd,identity" (common/grpc/src/channel_manager.rs,
// configure_tonic_client!). Here only the large answers built from cached
// encodings are compressed, always with zstd when listed (smaller and 2-6x
// cheaper than gzip: bench/RESULTS.md, "Compressed answers"); every other
// answer is identity, which every client accepts. See docs/DESIGN.md,
// "Compressed answers".
#ifndef METASRV_SERVER_RPC_ANSWER_ENCODING_H_
#define METASRV_SERVER_RPC_ANSWER_ENCODING_H_

#include <cstddef>
#include <memory>
#include <string>

#include "absl/strings/string_view.h"
#include "server/rpc/request_decoding.h"
#include "server/rpc/shared_bytes.h"

namespace metasrv::server {

// Answers smaller than this stay identity: a frame's overhead and the CPU
// buy nothing there.
inline constexpr size_t kCompressFromBytes = 1024;
// zstd's level for answers (level 3: zstd's default).
inline constexpr int kAnswerZstdLevel = 3;

// The encoding to answer in for a client whose grpc-accept-encoding is
// `accept` (a comma-separated list): kZstd when it lists zstd, else kNone.
Compression AnswerCompressionFor(absl::string_view accept);

// The grpc-encoding that names `compression` ("identity" for kNone).
absl::string_view EncodingName(Compression compression);

// `plain` compressed as one zstd frame, or null when that would not be
// smaller or `plain` is under kCompressFromBytes (send it plain then).
// Thread-safe: each thread keeps its own compressor.
std::shared_ptr<const std::string> CompressZstd(const SharedPieces& plain);

}  // namespace metasrv::server

#endif  // METASRV_SERVER_RPC_ANSWER_ENCODING_H_
