// A request message as the transport read it: its bytes, still encoded
// (zstd included), for the method's codec to read.
#ifndef METASRV_SERVER_RPC_RAW_REQUEST_H_
#define METASRV_SERVER_RPC_RAW_REQUEST_H_

#include <google/protobuf/message_lite.h>

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "server/rpc/request_decoding.h"

namespace metasrv::server {

// A request message as the transport read it: its bytes, still encoded (zstd
// included), and the most its method lets them inflate to. Valid only
// during the call it is passed to.
class RawRequest {
 public:
  // Borrows `bytes`.
  RawRequest(const std::string* bytes, size_t max_bytes)
      : bytes_(*bytes), max_bytes_(max_bytes) {}
  // Decodes it into `message` (see DecodeRequest), inflating at most
  // max_bytes().
  absl::Status DecodeInto(google::protobuf::MessageLite* message,
                          absl::string_view type = {}) const {
    return DecodeRequest(bytes_, max_bytes_, message, type);
  }
  // Its method's bound on an inflated request.
  size_t max_bytes() const { return max_bytes_; }

 private:
  const absl::string_view bytes_;  // Borrowed.
  const size_t max_bytes_;
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_RPC_RAW_REQUEST_H_
