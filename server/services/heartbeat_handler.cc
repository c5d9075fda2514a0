#include "server/services/heartbeat_handler.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "metasrv/v1/metasrv.pb.h"
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
    const HeartbeatRequest& request) {
  if (request.has_header()) return request.header().member_id();
  if (request.has_peer()) return request.peer().id();
  return std::nullopt;
}

core::FlowStateValue HeartbeatHandler::ToReport(
    const greptime::v1::meta::FlowStat& stat,
    const google::protobuf::Map<uint32_t, int64_t>* start_times) {
  core::FlowStateValue::Builder builder;
  builder.Reserve(stat.flow_stat_size_size() +
                  stat.flow_last_exec_time_map_size() +
                  (start_times == nullptr ? 0 : start_times->size()));
  for (const auto& [flow_id, size] : stat.flow_stat_size()) {
    builder.SetStateSize(flow_id, size);
  }
  for (const auto& [flow_id, unix_ms] : stat.flow_last_exec_time_map()) {
    builder.SetLastExecTime(flow_id, unix_ms);
  }
  if (start_times != nullptr) {
    for (const auto& [flow_id, unix_ms] : *start_times) {
      builder.SetStartTime(flow_id, unix_ms);
    }
  }
  return builder.Build();
}

absl::StatusOr<core::FlowStateValue> HeartbeatHandler::ReadReport(
    const HeartbeatRequest& request, uint64_t node) {
  // The start times, from the extension a flownode may send.
  // Only a report that carries the extension pays for parsing it.
  const google::protobuf::Map<uint32_t, int64_t>* start_times = nullptr;
  std::optional<metasrv::v1::FlowStartTimes> extension;
  auto ext = request.extensions().find(kFlowStartTimeExtension);
  if (ext != request.extensions().end()) {
    extension.emplace();
    if (!extension->ParseFromString(ext->second)) {
      metrics_->ReportIgnored(IgnoredReason::kMalformed);
      return absl::InvalidArgumentError(absl::StrCat(
          "report of node ", node, ": extension \"", kFlowStartTimeExtension,
          "\" is not an encoded metasrv.v1.FlowStartTimes"));
    }
    start_times = &extension->start_time_ms();
  }
  const auto& stat = request.flow_stat();
  // A cheap bound first (no map can hold more than the distinct flows),
  // then the exact count: distinct flow ids over the three maps.
  const uint64_t largest = static_cast<uint64_t>(std::max(
      {stat.flow_stat_size_size(), stat.flow_last_exec_time_map_size(),
       start_times == nullptr ? 0 : static_cast<int>(start_times->size())}));
  std::optional<core::FlowStateValue> report;
  if (largest <= options_.max_flows_per_report) {
    report = ToReport(stat, start_times);
  }
  const uint64_t flows = report.has_value() ? report->flows().size() : largest;
  if (flows > options_.max_flows_per_report) {
    metrics_->ReportIgnored(IgnoredReason::kTooManyFlows);
    return absl::InvalidArgumentError(absl::StrCat(
        "report of node ", node, " has ", flows,
        " flows, more than the limit of ", options_.max_flows_per_report));
  }
  return *std::move(report);
}

absl::StatusOr<MergeResult> HeartbeatHandler::MergeFlowStat(
    const HeartbeatRequest& request, greptime::v1::meta::Role role,
    std::optional<uint64_t> state_term) {
  const bool has_report = request.has_flow_stat();
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
    absl::StatusOr<core::FlowStateValue> report = ReadReport(request, *node);
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
  metrics_->ReportMerged(absl::Now() - start,
                         request.flow_stat().ByteSizeLong());
  return MergeResult::kMerged;
}

uint64_t HeartbeatHandler::IntervalFor(int role) const {
  return role == greptime::v1::meta::FRONTEND
             ? options_.heartbeat_interval_ms * kFrontendIntervalFactor
             : options_.heartbeat_interval_ms;
}

absl::Status HeartbeatHandler::Handle(const HeartbeatRequest& request,
                                      bool handshake,
                                      HeartbeatResponse* response) {
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
  const core::Leadership::Term term = leadership_->CurrentTerm();
  if (term.leading) {
    absl::StatusOr<MergeResult> merged =
        MergeFlowStat(request, request.header().role(), term.state_term);
    // kAborted: leadership was lost while merging; answer as a follower.
    if (merged.ok() || !absl::IsAborted(merged.status())) {
      return merged.status();
    }
  }
  if (request.has_flow_stat() && !term.leading) {
    metrics_->ReportIgnored(IgnoredReason::kNotLeader);
  }
  SetNotLeader(*leadership_, response->mutable_header());
  return absl::AbortedError(response->header().error().err_msg());
}

}  // namespace metasrv::server
