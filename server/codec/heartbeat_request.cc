#include "server/codec/heartbeat_request.h"

#include <algorithm>
#include <array>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "metasrv/v1/metasrv.pb.h"
#include "server/codec/flow_stat_wire.h"
#include "server/codec/node_identity.h"
#include "server/codec/node_info_proto.h"

namespace metasrv::server {
namespace {

google::protobuf::ArenaOptions FirstBlock(char* block, size_t size) {
  google::protobuf::ArenaOptions options;
  options.initial_block = block;
  options.initial_block_size = size;
  return options;
}

// Fields of flow_stat entries a reader keeps room for between requests.
constexpr size_t kKeepFlowFields = 4096;

absl::Status Malformed() {
  return absl::InvalidArgumentError(
      absl::StrCat("malformed HeartbeatRequest: the bytes do not parse as ",
                   kHeartbeatRequestType));
}

}  // namespace

HeartbeatRequestReader::HeartbeatRequestReader()
    : arena_(FirstBlock(block_, sizeof(block_))) {
  Fresh();
}

metasrv::v1::HeartbeatFrame* HeartbeatRequestReader::Fresh() {
  arena_.Reset();
  flows_.Truncate(0);
  // A stream that once sent a huge report does not keep its room.
  if (flows_.capacity() > kKeepFlowFields) {
    flows_ = core::FlowStateValue::Builder();
  }
  flow_stat_bytes_ = 0;
  frame_ = google::protobuf::Arena::CreateMessage<metasrv::v1::HeartbeatFrame>(
      &arena_);
  return frame_;
}

absl::Status HeartbeatRequestReader::DecodeFlows(absl::Status parsed) {
  node_id_.reset();
  if (!parsed.ok()) return parsed;
  if (frame_->has_header()) {
    node_id_ = frame_->header().member_id();
  } else if (frame_->has_peer()) {
    node_id_ = frame_->peer().id();
  }
  for (const std::string& stat : frame_->flow_stat()) {
    flow_stat_bytes_ += stat.size();
    if (!DecodeFlowStat(stat, &flows_)) return Malformed();
  }
  return absl::OkStatus();
}

absl::Status HeartbeatRequestReader::Read(const RawRequest& raw) {
  return DecodeFlows(raw.DecodeInto(Fresh(), kHeartbeatRequestType));
}

absl::Status HeartbeatRequestReader::Read(
    const greptime::v1::meta::HeartbeatRequest& request) {
  return Read(request.SerializeAsString());
}

absl::Status HeartbeatRequestReader::Read(absl::string_view bytes) {
  metasrv::v1::HeartbeatFrame* frame = Fresh();
  const bool parsed =
      frame->ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
  return DecodeFlows(parsed ? absl::OkStatus() : Malformed());
}

absl::Status HeartbeatRequestReader::Check() const {
  const metasrv::v1::HeartbeatFrame& request = *frame_;
  if (!request.has_header()) {
    return absl::InvalidArgumentError("heartbeat request has no header");
  }
  const int role = request.header().role();
  if (!greptime::v1::meta::Role_IsValid(role)) {
    return absl::InvalidArgumentError(
        absl::StrCat("heartbeat request has unknown role ", role));
  }
  const auto& info = request.info();
  for (const auto& [name, value] : {std::pair<const char*, const std::string*>{
                                        "peer.addr", &request.peer().addr()},
                                    {"info.version", &info.version()},
                                    {"info.git_commit", &info.git_commit()},
                                    {"info.hostname", &info.hostname()}}) {
    if (value->size() > kMaxNodeStringBytes) {
      return absl::InvalidArgumentError(
          absl::StrCat("heartbeat request's ", name, " has ", value->size(),
                       " bytes, more than the limit of ", kMaxNodeStringBytes));
    }
  }
  const int types = request.has_flownode()   ? request.flownode().types_size()
                    : request.has_frontend() ? request.frontend().types_size()
                    : request.has_datanode() ? request.datanode().types_size()
                                             : 0;
  if (types > kMaxWorkloadTypes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "heartbeat request has ", types,
        " workload types, more than the limit of ", kMaxWorkloadTypes));
  }
  return absl::OkStatus();
}

absl::StatusOr<ParsedHeartbeat> HeartbeatRequestReader::Parse(
    uint64_t max_flows_per_report) {
  if (absl::Status checked = Check(); !checked.ok()) return checked;
  return Whole(frame_->header().role(), max_flows_per_report);
}

ParsedHeartbeat HeartbeatRequestReader::Whole(greptime::v1::meta::Role role,
                                              uint64_t max_flows_per_report) {
  ParsedHeartbeat parsed;
  parsed.role = role;
  parsed.node_id = node_id_;
  parsed.has_report = has_flow_stat();
  parsed.report_bytes = flow_stat_bytes_;
  if (role != greptime::v1::meta::FLOWNODE) {
    // Its cluster info is all a frontend's or datanode's heartbeat records.
    core::NodeHeartbeat heartbeat;
    heartbeat.cluster_node = ClusterNodeOf(*frame_);
    parsed.heartbeat = std::move(heartbeat);
  } else if (node_id_.has_value()) {
    parsed.heartbeat =
        TakeHeartbeat(*node_id_, max_flows_per_report, &parsed.refusal);
  }
  return parsed;
}

absl::StatusOr<core::NodeHeartbeat> HeartbeatRequestReader::TakeHeartbeat(
    uint64_t node, uint64_t max_flows_per_report, ReportRefusal* why) {
  *why = ReportRefusal::kNone;
  const metasrv::v1::HeartbeatFrame& request = *frame_;
  core::NodeHeartbeat heartbeat;
  heartbeat.peer_addr = request.peer().addr();
  if (request.has_info()) heartbeat.info = FromProto(request.info());
  heartbeat.cluster_node = ClusterNodeOf(request);
  if (!has_flow_stat()) return heartbeat;
  // The start times, from the extension a flownode may send. Only a report
  // that carries it pays for parsing it.
  auto ext = request.extensions().find(kFlowStartTimeExtension);
  if (ext != request.extensions().end()) {
    metasrv::v1::FlowStartTimes extension;
    if (!extension.ParseFromString(ext->second)) {
      *why = ReportRefusal::kMalformedExtension;
      return absl::InvalidArgumentError(absl::StrCat(
          "report of node ", node, ": extension \"", kFlowStartTimeExtension,
          "\" is not an encoded metasrv.v1.FlowStartTimes"));
    }
    for (const auto& [flow_id, unix_ms] : extension.start_time_ms()) {
      flows_.SetStartTime(flow_id, unix_ms);
    }
  }
  core::FlowStateValue report = flows_.Build();
  // Each map's distinct flows, and all of them: a map past the limit is
  // named by its own count, as the maps would count.
  std::array<uint64_t, core::kFlowFieldCount> per_field{};
  for (const core::FlowStat& stat : report.flows()) {
    int field = 0;
#define METASRV_FIELD_COUNT_IN(Name, ...) \
  per_field[field++] += stat.has(core::k##Name);
    METASRV_FLOW_FIELDS(METASRV_FIELD_COUNT_IN)
#undef METASRV_FIELD_COUNT_IN
  }
  const uint64_t largest = *std::max_element(per_field.begin(), per_field.end());
  const uint64_t flows =
      largest > max_flows_per_report ? largest : report.flows().size();
  if (flows > max_flows_per_report) {
    *why = ReportRefusal::kTooManyFlows;
    return absl::InvalidArgumentError(
        absl::StrCat("report of node ", node, " has ", flows,
                     " flows, more than the limit of ", max_flows_per_report));
  }
  heartbeat.report = std::move(report);
  return heartbeat;
}

absl::Status DecodeMessage(const RawRequest& raw, DecodedHeartbeat* request) {
  if (absl::Status read = request->reader.Read(raw); !read.ok()) return read;
  absl::StatusOr<ParsedHeartbeat> parsed =
      request->reader.Parse(request->max_flows_per_report);
  if (!parsed.ok()) return parsed.status();
  request->parsed = *std::move(parsed);
  return absl::OkStatus();
}

}  // namespace metasrv::server
