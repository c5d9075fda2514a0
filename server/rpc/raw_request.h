// A request message as the transport read it: its bytes, still compressed
// as its flag and grpc-encoding said, for the method's codec to read.
#ifndef METASRV_SERVER_RPC_RAW_REQUEST_H_
#define METASRV_SERVER_RPC_RAW_REQUEST_H_

#include <google/protobuf/message_lite.h>

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "server/rpc/host_shares.h"
#include "server/rpc/request_decoding.h"

namespace metasrv::server {

// A request message as the transport read it: its bytes, their compression
// (the transport's decision: CallEvents::OnMessage) and the most its method
// lets them inflate to. Valid only during the call it is passed to.
class RawRequest {
 public:
  // Borrows `bytes`.
  // Borrows `bytes`; inflation is charged through `gate` (its call's,
  // H2Call::inflate_gate()).
  RawRequest(const std::string* bytes, Compression compression,
             size_t max_bytes, InflateGate gate = {})
      : bytes_(*bytes),
        compression_(compression),
        max_bytes_(max_bytes),
        gate_(gate) {}
  // Decodes it into `message` (see DecodeRequest), inflating at most
  // max_bytes(); kResourceExhausted without inflating while its host is
  // past its share of the inflation bound (HostInflation).
  absl::Status DecodeInto(google::protobuf::MessageLite* message,
                          absl::string_view type = {}) const {
    const bool gated =
        compression_ != Compression::kNone && gate_.share != nullptr;
    if (gated && !gate_.share->May(*gate_.host, absl::Now())) {
      return absl::ResourceExhaustedError(
          "this client host's compressed requests inflated to more than its "
          "share of what the server inflates a second; retry later");
    }
    size_t inflated = 0;
    absl::Status decoded = DecodeRequest(bytes_, compression_, max_bytes_,
                                         message, type, &inflated);
    if (gated) {
      gate_.share->Charge(*gate_.host, static_cast<int64_t>(inflated),
                          absl::Now());
    }
    return decoded;
  }
  // Its method's bound on an inflated request.
  size_t max_bytes() const { return max_bytes_; }

 private:
  const absl::string_view bytes_;  // Borrowed.
  const Compression compression_;
  const size_t max_bytes_;
  const InflateGate gate_;
};

// Decodes `raw` into `request`: what every shape's decode-and-admit step
// calls (H2DoorCall::DecodeAndAdmit). A protobuf message is parsed by
// protobuf; a codec with a reader of its own declares an overload of
// DecodeMessage for it, in its reader's namespace, beside the reader.
inline absl::Status DecodeMessage(const RawRequest& raw,
                                  google::protobuf::MessageLite* request) {
  return raw.DecodeInto(request);
}

}  // namespace metasrv::server

#endif  // METASRV_SERVER_RPC_RAW_REQUEST_H_
