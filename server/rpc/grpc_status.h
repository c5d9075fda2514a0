// The one place where absl::Status becomes a gRPC status on the wire, with
// the error metadata GreptimeDB's servers attach to every error.
#ifndef METASRV_SERVER_RPC_GRPC_STATUS_H_
#define METASRV_SERVER_RPC_GRPC_STATUS_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace metasrv::server {

// The trailing metadata of a GreptimeDB error (GREPTIME_DB_HEADER_ERROR_* in
// src/common/error/src/lib.rs, set by define_into_tonic_status in
// status_code.rs); the meta client reads them back (define_from_tonic_status)
// for the error's status code and whether to retry.
inline constexpr char kGreptimeErrCode[] = "x-greptime-err-code";
inline constexpr char kGreptimeErrRetryHint[] = "x-greptime-err-retry-hint";

// GreptimeDB's StatusCode numbers that our errors map to
// (src/common/error/src/status_code.rs).
enum class GreptimeCode : uint32_t {
  kUnknown = 1000,
  kUnsupported = 1001,
  kInternal = 1003,
  kInvalidArguments = 1004,
  kCancelled = 1005,
  kStorageUnavailable = 5000,
  kRuntimeResourcesExhausted = 6000,
  kAuthHeaderNotFound = 7003,
  kPermissionDenied = 7006,
};

// How GreptimeDB would classify `status`: its status code, and its retry
// hint ("retryable" or "non_retryable", RetryHint::as_str in
// src/common/error/src/ext.rs).
struct GreptimeError {
  GreptimeCode code = GreptimeCode::kInternal;  // x-greptime-err-code.
  bool retryable = false;                       // x-greptime-err-retry-hint.
};
GreptimeError ClassifyForGreptime(const absl::Status& status);

// A status as the transport sends it: the same canonical code; the message
// without surrounding whitespace; with `greptime`, for an error, GreptimeDB's
// two trailers (x-greptime-err-code, x-greptime-err-retry-hint), and an
// internal or unknown error's message masked as upstream's output_msg()
// masks it ("Internal error: 1003"), the real one logged. Every status the
// server sends goes through here.
struct WireStatus {
  int code = 0;
  std::string message;
  std::vector<std::pair<std::string, std::string>> trailers;
};
WireStatus ToWireStatus(const absl::Status& status, bool greptime);

}  // namespace metasrv::server

#endif  // METASRV_SERVER_RPC_GRPC_STATUS_H_
