#include "server/rpc/grpc_status.h"

#include <string>

#include "absl/strings/ascii.h"

namespace metasrv::server {

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

}  // namespace metasrv::server
