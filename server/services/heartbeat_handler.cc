#include "server/services/heartbeat_handler.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "metasrv/v1/metasrv.pb.h"
#include "server/rpc/method_table.h"
#include "server/services/node_identity.h"
#include "server/services/node_info_proto.h"
#include "spdlog/spdlog.h"

namespace metasrv::server {

using greptime::v1::meta::HeartbeatRequest;
using greptime::v1::meta::HeartbeatResponse;

HeartbeatHandler::HeartbeatHandler(core::FlowStateManager* flow_state,
                                   const core::Leadership* leadership,
                                   Options options, Metrics* metrics)
    : flow_state_(flow_state),
      leadership_(leadership),
      options_(options),
      metrics_(Metrics::OrDiscard(metrics)) {}

std::optional<uint64_t> HeartbeatHandler::NodeId(
    const metasrv::v1::HeartbeatFrame& request) {
  if (request.has_header()) return request.header().member_id();
  if (request.has_peer()) return request.peer().id();
  return std::nullopt;
}

absl::StatusOr<core::FlowStateValue> HeartbeatHandler::ReadReport(
    HeartbeatRequestReader* reader, uint64_t node) {
  const metasrv::v1::HeartbeatFrame& request = reader->request();
  core::FlowStateValue::Builder* builder = reader->flows();
  // The start times, from the extension a flownode may send. Only a report
  // that carries it pays for parsing it.
  auto ext = request.extensions().find(kFlowStartTimeExtension);
  if (ext != request.extensions().end()) {
    metasrv::v1::FlowStartTimes extension;
    if (!extension.ParseFromString(ext->second)) {
      metrics_->ReportIgnored(IgnoredReason::kMalformed);
      return absl::InvalidArgumentError(absl::StrCat(
          "report of node ", node, ": extension \"", kFlowStartTimeExtension,
          "\" is not an encoded metasrv.v1.FlowStartTimes"));
    }
    for (const auto& [flow_id, unix_ms] : extension.start_time_ms()) {
      builder->SetStartTime(flow_id, unix_ms);
    }
  }
  core::FlowStateValue report = builder->Build();
  // Each map's distinct flows, and all of them: a map past the limit is
  // named by its own count, as the three maps would count.
  uint64_t per_field[3] = {0, 0, 0};
  for (const core::FlowStat& stat : report.flows()) {
    per_field[0] += stat.has(core::kStateSize);
    per_field[1] += stat.has(core::kLastExecTime);
    per_field[2] += stat.has(core::kStartTime);
  }
  const uint64_t largest = std::max({per_field[0], per_field[1], per_field[2]});
  const uint64_t flows =
      largest > options_.max_flows_per_report ? largest : report.flows().size();
  if (flows > options_.max_flows_per_report) {
    metrics_->ReportIgnored(IgnoredReason::kTooManyFlows);
    return absl::InvalidArgumentError(absl::StrCat(
        "report of node ", node, " has ", flows,
        " flows, more than the limit of ", options_.max_flows_per_report));
  }
  return report;
}

absl::StatusOr<MergeResult> HeartbeatHandler::MergeFlowStat(
    HeartbeatRequestReader* reader, greptime::v1::meta::Role role,
    std::optional<uint64_t> state_term) {
  const metasrv::v1::HeartbeatFrame& request = reader->request();
  const bool has_report = reader->has_flow_stat();
  if (role != greptime::v1::meta::FLOWNODE) {
    // Its cluster info is all a frontend's or datanode's heartbeat records.
    if (std::optional<core::ClusterNode> node = ClusterNodeOf(request)) {
      absl::Status recorded = flow_state_->RecordNode(*node, state_term);
      if (!recorded.ok()) return recorded;
    }
    if (!has_report) return MergeResult::kNoFlowStat;
    metrics_->ReportIgnored(IgnoredReason::kNotFlownode);
    return MergeResult::kNotFlownode;
  }
  std::optional<uint64_t> node = NodeId(request);
  if (!node.has_value()) {
    if (!has_report) return MergeResult::kNoFlowStat;
    spdlog::debug("flow stat without header or peer ignored");
    metrics_->ReportIgnored(IgnoredReason::kNoNodeId);
    return MergeResult::kNoNodeId;
  }
  core::NodeHeartbeat heartbeat;
  heartbeat.peer_addr = request.peer().addr();
  if (request.has_info()) heartbeat.info = FromProto(request.info());
  heartbeat.cluster_node = ClusterNodeOf(request);
  if (has_report) {
    absl::StatusOr<core::FlowStateValue> report = ReadReport(reader, *node);
    if (!report.ok()) return report.status();
    heartbeat.report = *std::move(report);
  }
  const absl::Time start = absl::Now();
  absl::Status recorded =
      flow_state_->Heartbeat(*node, std::move(heartbeat), state_term);
  if (!recorded.ok()) {
    if (absl::IsAborted(recorded) && has_report) {
      metrics_->ReportIgnored(IgnoredReason::kNotLeader);
    }
    if (absl::IsResourceExhausted(recorded)) {
      metrics_->ReportIgnored(IgnoredReason::kOverCapacity);
    }
    return recorded;
  }
  if (!has_report) return MergeResult::kNoFlowStat;
  metrics_->ReportMerged(absl::Now() - start, reader->flow_stat_bytes());
  return MergeResult::kMerged;
}

uint64_t HeartbeatHandler::IntervalFor(int role) const {
  return role == greptime::v1::meta::FRONTEND
             ? options_.heartbeat_interval_ms * kFrontendIntervalFactor
             : options_.heartbeat_interval_ms;
}

absl::Status HeartbeatHandler::Handle(HeartbeatRequestReader* reader,
                                      bool handshake,
                                      HeartbeatResponse* response) {
  const metasrv::v1::HeartbeatFrame& request = reader->request();
  if (!request.has_header()) {
    return absl::InvalidArgumentError("heartbeat request has no header");
  }
  const int role = request.header().role();
  if (!greptime::v1::meta::Role_IsValid(role)) {
    return absl::InvalidArgumentError(
        absl::StrCat("heartbeat request has unknown role ", role));
  }
  // What a node says about itself is bounded before anything is kept.
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
  metrics_->HeartbeatReceived(role);
  response->Clear();
  response->mutable_header()->set_protocol_version(1);
  // Every handshake answer carries the config, the not-leader one included.
  if (handshake) {
    auto* config = response->mutable_heartbeat_config();
    config->set_heartbeat_interval_ms(IntervalFor(role));
    config->set_retry_interval_ms(options_.retry_interval_ms);
  }
  // Each request is admitted by the heartbeat's row of the method table, as
  // the door admits every call (rpc/method_table.h).
  absl::StatusOr<Admission> admitted =
      AdmitLeader(Method::kHeartbeat, *leadership_);
  const bool serve = admitted.ok() && admitted->kind == Admission::Kind::kServe;
  if (serve) {
    absl::StatusOr<MergeResult> merged =
        MergeFlowStat(reader, request.header().role(), admitted->state_term);
    // kAborted: leadership was lost while merging; answer as a follower.
    if (merged.ok() || !absl::IsAborted(merged.status())) {
      return merged.status();
    }
  }
  if (reader->has_flow_stat() && !serve) {
    metrics_->ReportIgnored(IgnoredReason::kNotLeader);
  }
  SetNotLeader(*leadership_, response->mutable_header());
  return absl::AbortedError(response->header().error().err_msg());
}

}  // namespace metasrv::server
