// One heartbeat request as the server reads it off the wire.
#ifndef METASRV_SERVER_CODEC_HEARTBEAT_REQUEST_H_
#define METASRV_SERVER_CODEC_HEARTBEAT_REQUEST_H_

#include <google/protobuf/arena.h>

#include <cstddef>
#include <cstdint>
#include <optional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/flow_state_store.h"
#include "core/flow_state_value.h"
#include "greptime/v1/meta/heartbeat.pb.h"
#include "metasrv/v1/heartbeat_frame.pb.h"
#include "server/rpc/raw_request.h"

namespace metasrv::server {

// The longest peer address and NodeInfo string (version, git_commit,
// hostname) a heartbeat may carry: a host name is at most 253 bytes, and a
// longer value would only cost memory in every record, cluster-info key and
// answer that holds it. A heartbeat past it ends its stream with
// INVALID_ARGUMENT; nothing of it is recorded.
inline constexpr size_t kMaxNodeStringBytes = 256;
// The most workload types a heartbeat may give (upstream knows a handful);
// past it, the same.
inline constexpr int kMaxWorkloadTypes = 64;

// The extension a flownode may send with its report, an encoded
// metasrv.v1.FlowStartTimes: each flow's start time.
inline constexpr char kFlowStartTimeExtension[] = "flow_start_time_map";

// Why a flownode's report was refused.
enum class ReportRefusal {
  kNone,
  kMalformedExtension,  // kFlowStartTimeExtension does not parse.
  kTooManyFlows,        // More flows than the limit in one of its maps.
};

// The name requests are parsed as, in errors: what a client sent.
inline constexpr absl::string_view kHeartbeatRequestType =
    "greptime.v1.meta.HeartbeatRequest";

// A heartbeat request read whole: everything the handler acts on, in one
// value.
struct ParsedHeartbeat {
  // The header's role (known, once checked; else the role it was read as).
  greptime::v1::meta::Role role = greptime::v1::meta::DATANODE;
  // The node it speaks for (HeartbeatRequestReader::node_id).
  std::optional<uint64_t> node_id;
  bool has_report = false;  // It carried a flow_stat (empty or not).
  size_t report_bytes = 0;  // The bytes its flow_stat took on the wire.
  // A flownode's with a node id: its heartbeat whole (peer address,
  // NodeInfo, cluster info, the report), or kInvalidArgument when the
  // report is refused (`refusal` says why). Any other role's: its cluster
  // info alone.
  absl::StatusOr<core::NodeHeartbeat> heartbeat;
  ReportRefusal refusal = ReportRefusal::kNone;
};

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
  // - kResourceExhausted: it inflates past its method's bound.
  // - kInvalidArgument "malformed HeartbeatRequest: ...": the bytes, the
  //   flow_stat they carry included, do not parse as a HeartbeatRequest.
  absl::Status Read(const RawRequest& raw);
  // The same for a request built in memory, read through its bytes: for
  // tests and the fuzzer, which so speak to the handler as clients do.
  absl::Status Read(const greptime::v1::meta::HeartbeatRequest& request);
  absl::Status Read(absl::string_view bytes);

  // The request last read: every field but flow_stat's maps.
  const metasrv::v1::HeartbeatFrame& request() const { return *frame_; }
  // The node it speaks for: header.member_id when a header is present (even
  // 0), else peer.id when a peer is present, else none. Worked out once per
  // request, when read.
  std::optional<uint64_t> node_id() const { return node_id_; }
  // Its own shape, checked before anything of it is kept: a header, a known
  // role, node strings (peer address, NodeInfo's version, git commit and
  // host name) within kMaxNodeStringBytes, and at most kMaxWorkloadTypes
  // workload types. kInvalidArgument naming what is wrong.
  absl::Status Check() const;
  // What it says of its node, whole: its peer address, NodeInfo and cluster
  // info and, when it carried a flow_stat, the report (the flows, taken from
  // flows(), with the start times of kFlowStartTimeExtension), every map
  // held to `max_flows_per_report` distinct flows. kInvalidArgument, naming
  // `node` and with `*why` set, for a malformed extension or too many flows;
  // nothing is returned then.
  absl::StatusOr<core::NodeHeartbeat> TakeHeartbeat(
      uint64_t node, uint64_t max_flows_per_report, ReportRefusal* why);
  // The request last read, checked (Check()) and read whole for a node of
  // its header's role, its report held to `max_flows_per_report` flows:
  // the one value the handler acts on. kInvalidArgument from Check().
  absl::StatusOr<ParsedHeartbeat> Parse(uint64_t max_flows_per_report);
  // The same without the check, read as a node of `role` (tests).
  ParsedHeartbeat Whole(greptime::v1::meta::Role role,
                        uint64_t max_flows_per_report);
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
  std::optional<uint64_t> node_id_;               // See node_id().
};

// One heartbeat stream's requests as the stream shape decodes them (its
// Request, stream_call.h): each message read and parsed whole in one step,
// its report held to `max_flows_per_report` flows. Thread-compatible: one
// per stream.
struct DecodedHeartbeat {
  explicit DecodedHeartbeat(uint64_t max_flows_per_report)
      : max_flows_per_report(max_flows_per_report) {}
  const uint64_t max_flows_per_report;
  HeartbeatRequestReader reader;  // Reads each message; reused.
  ParsedHeartbeat parsed;         // The message last decoded, whole.
};

// The heartbeat's codec as the stream shape enters it, once per message:
// `raw` read (HeartbeatRequestReader::Read) and parsed whole (Parse) into
// `request->parsed`. An error from either, naming what is wrong; then
// `request->parsed` is not to be used.
absl::Status DecodeMessage(const RawRequest& raw, DecodedHeartbeat* request);

}  // namespace metasrv::server

#endif  // METASRV_SERVER_CODEC_HEARTBEAT_REQUEST_H_
