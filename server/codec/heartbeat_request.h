// One heartbeat request as the server reads it off the wire.
#ifndef METASRV_SERVER_CODEC_HEARTBEAT_REQUEST_H_
#define METASRV_SERVER_CODEC_HEARTBEAT_REQUEST_H_

#include <google/protobuf/arena.h>
#include <grpc/grpc.h>
#include <grpcpp/support/byte_buffer.h>

#include <cstddef>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/flow_state_value.h"
#include "greptime/v1/meta/heartbeat.pb.h"
#include "metasrv/v1/heartbeat_frame.pb.h"

namespace metasrv::server {

// The name requests are parsed as, in errors: what a client sent.
inline constexpr absl::string_view kHeartbeatRequestType =
    "greptime.v1.meta.HeartbeatRequest";

// A greptime.v1.meta.HeartbeatRequest, parsed: its fields (as a
// HeartbeatFrame, on an arena reused from one request to the next) and its
// flow_stat's entries, decoded straight into a report builder
// (flow_stat_wire.h) rather than into protobuf maps. What it accepts, and
// what it makes of it, are what protobuf's parse of a HeartbeatRequest gives.
//
// Thread-compatible: one per stream, used by one thread at a time.
class HeartbeatRequestReader {
 public:
  HeartbeatRequestReader();
  HeartbeatRequestReader(const HeartbeatRequestReader&) = delete;
  HeartbeatRequestReader& operator=(const HeartbeatRequestReader&) = delete;

  // Parses one request's bytes, zstd-compressed or not (DecodeRequest),
  // replacing the previous request.
  // - OK: request() and flows() hold it.
  // - kResourceExhausted: it inflates past `max_bytes`.
  // - kInvalidArgument "malformed HeartbeatRequest: ...": the bytes, the
  //   flow_stat they carry included, do not parse as a HeartbeatRequest.
  absl::Status Read(grpc_byte_buffer* raw, size_t max_bytes);
  absl::Status Read(grpc::ByteBuffer* raw, size_t max_bytes);
  // The same for a request built in memory, read through its bytes: for
  // tests and the fuzzer, which so speak to the handler as clients do.
  absl::Status Read(const greptime::v1::meta::HeartbeatRequest& request);
  absl::Status Read(absl::string_view bytes);

  // The request last read: every field but flow_stat's maps.
  const metasrv::v1::HeartbeatFrame& request() const { return *frame_; }
  // Whether it carried a flow_stat (empty or not).
  bool has_flow_stat() const { return frame_->flow_stat_size() > 0; }
  // Its flow_stat's state sizes and last execution times, not yet built;
  // whoever builds the report takes them.
  core::FlowStateValue::Builder* flows() { return &flows_; }
  // The bytes its flow_stat took on the wire.
  size_t flow_stat_bytes() const { return flow_stat_bytes_; }

 private:
  // A fresh, empty frame on the reset arena.
  metasrv::v1::HeartbeatFrame* Fresh();
  // Decodes the flow_stat of the frame just parsed (given `parsed`, the
  // parse's status) into flows_.
  absl::Status DecodeFlows(absl::Status parsed);

  // The arena's first block: a typical request costs no malloc.
  alignas(8) char block_[2048];
  google::protobuf::Arena arena_;  // Holds frame_; reset per request.
  metasrv::v1::HeartbeatFrame* frame_ = nullptr;  // The request; on arena_.
  core::FlowStateValue::Builder flows_;           // Its flow_stat's entries.
  size_t flow_stat_bytes_ = 0;                    // Their bytes on the wire.
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_CODEC_HEARTBEAT_REQUEST_H_
