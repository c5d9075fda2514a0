#include "server/rpc/grpc_status.h"

#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "server/ops/log_limit.h"

namespace metasrv::server {
GreptimeError ClassifyForGreptime(const absl::Status& status) {
  // Retry hints as upstream derives them from the status code
  // (StatusCode::is_retryable): internal, unavailable storage and exhausted
  // resources are retryable; the rest is not.
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
      return {GreptimeCode::kInvalidArguments, false};
    case absl::StatusCode::kFailedPrecondition:
      // Our "not leader" for our own RPCs and a refused configuration: the
      // same call will not succeed here.
      return {GreptimeCode::kInvalidArguments, false};
    case absl::StatusCode::kUnavailable:
      return {GreptimeCode::kStorageUnavailable, true};
    case absl::StatusCode::kResourceExhausted:
      return {GreptimeCode::kRuntimeResourcesExhausted, true};
    case absl::StatusCode::kUnauthenticated:
      return {GreptimeCode::kAuthHeaderNotFound, false};
    case absl::StatusCode::kPermissionDenied:
      return {GreptimeCode::kPermissionDenied, false};
    case absl::StatusCode::kUnimplemented:
    case absl::StatusCode::kNotFound:
      return {GreptimeCode::kUnsupported, false};
    case absl::StatusCode::kCancelled:
    case absl::StatusCode::kDeadlineExceeded:
      return {GreptimeCode::kCancelled, false};
    case absl::StatusCode::kUnknown:
      return {GreptimeCode::kUnknown, false};
    default:
      // kInternal, kAborted (leadership moved while serving: ask again),
      // kDataLoss, kAlreadyExists.
      return {GreptimeCode::kInternal, true};
  }
}

WireStatus ToWireStatus(const absl::Status& status, bool greptime) {
  WireStatus out;
  // absl and gRPC share the canonical code numbering (0..16). The message
  // becomes the grpc-message header, whose value must not start or end with
  // whitespace (RFC 9113 §8.2.1): strict HTTP/2 clients drop the whole
  // response otherwise.
  out.code = static_cast<int>(status.code());
  out.message = std::string(absl::StripAsciiWhitespace(status.message()));
  if (status.ok() || !greptime) return out;
  const GreptimeError error = ClassifyForGreptime(status);
  // Two entries, as define_into_tonic_status sends (no x-greptime-err-msg:
  // that is an HTTP header of upstream's servers).
  out.trailers.emplace_back(kGreptimeErrCode,
                            absl::StrCat(static_cast<uint32_t>(error.code)));
  out.trailers.emplace_back(kGreptimeErrRetryHint,
                            error.retryable ? "retryable" : "non_retryable");
  if (error.code == GreptimeCode::kInternal ||
      error.code == GreptimeCode::kUnknown) {
    // The message as upstream's output_msg() gives it (src/common/error/
    // src/ext.rs): internal errors are masked from clients. The log keeps
    // the real one.
    LogLimited(spdlog::level::warn, "internal_error_answered", "",
               "internal error answered as \"Internal error: {}\": {}",
               static_cast<uint32_t>(error.code), out.message);
    out.message =
        absl::StrCat("Internal error: ", static_cast<uint32_t>(error.code));
  }
  return out;
}

}  // namespace metasrv::server
