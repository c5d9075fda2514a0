#include "server/rpc/grpc_status.h"

#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace metasrv::server {
namespace {

// The longest x-greptime-err-msg sent: the message is also in grpc-message.
constexpr size_t kMaxMetadataMessage = 1024;

// `message` as a header value: printable ASCII kept, other bytes as \xNN
// (as upstream's from_err_code_msg_to_header escapes them), cut to a bound.
std::string HeaderValue(absl::string_view message) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (const char ch : message) {
    if (out.size() >= kMaxMetadataMessage) break;
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out.push_back(ch);
    } else {
      out.append("\\x");
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xf]);
    }
  }
  return out;
}

}  // namespace

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

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  // absl and gRPC share the canonical code numbering (0..16). The message
  // becomes the grpc-message header, whose value must not start or end with
  // whitespace (RFC 9113 §8.2.1): strict HTTP/2 clients drop the whole
  // response otherwise.
  return grpc::Status(
      static_cast<grpc::StatusCode>(status.code()),
      std::string(absl::StripAsciiWhitespace(status.message())));
}

grpc::Status ToGrpcStatus(const absl::Status& status,
                          grpc::ServerContextBase* context) {
  grpc::Status out = ToGrpcStatus(status);
  if (status.ok() || context == nullptr) return out;
  const GreptimeError error = ClassifyForGreptime(status);
  context->AddTrailingMetadata(kGreptimeErrCode,
                               absl::StrCat(static_cast<uint32_t>(error.code)));
  context->AddTrailingMetadata(kGreptimeErrMsg,
                               HeaderValue(out.error_message()));
  context->AddTrailingMetadata(kGreptimeErrRetryHint,
                               error.retryable ? "retryable" : "non_retryable");
  return out;
}

}  // namespace metasrv::server
