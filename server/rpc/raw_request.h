// A request message as gRPC handed it over to a stream: its bytes, still
// encoded (zstd included), for the method's codec to read.
#ifndef METASRV_SERVER_RPC_RAW_REQUEST_H_
#define METASRV_SERVER_RPC_RAW_REQUEST_H_

#include <grpc/grpc.h>
#include <grpcpp/support/byte_buffer.h>

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "server/rpc/grpc151_zstd_requests.h"

namespace metasrv::server {

// A request message as gRPC handed it over: its bytes, still encoded (zstd
// included). Valid only during the call it is passed to.
class RawRequest {
 public:
  explicit RawRequest(grpc_byte_buffer* bytes) : core_(bytes) {}
  explicit RawRequest(grpc::ByteBuffer* bytes) : cpp_(bytes) {}
  // A message as the nghttp2 transport read it (borrowed).
  explicit RawRequest(const std::string* bytes) : h2_(bytes) {}
  // Decodes it into `message` (see DecodeRequest), inflating at most
  // `max_bytes`.
  absl::Status DecodeInto(google::protobuf::MessageLite* message,
                          size_t max_bytes, absl::string_view type = {}) const {
    if (h2_ != nullptr) return DecodeRequest(*h2_, max_bytes, message, type);
    return core_ != nullptr ? DecodeRequest(core_, max_bytes, message, type)
                            : DecodeRequest(cpp_, max_bytes, message, type);
  }

 private:
  grpc_byte_buffer* const core_ = nullptr;  // gRPC's; borrowed; or
  grpc::ByteBuffer* const cpp_ = nullptr;   // the C++ API's; borrowed; or
  const std::string* const h2_ = nullptr;   // nghttp2's; borrowed.
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_RPC_RAW_REQUEST_H_
