#include "server/services/heartbeat_handler.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "metasrv/v1/metasrv.pb.h"
#include "server/ops/log_limit.h"
#include "spdlog/spdlog.h"

namespace metasrv::server {

using greptime::v1::meta::HeartbeatRequest;
using greptime::v1::meta::HeartbeatResponse;

HeartbeatHandler::HeartbeatHandler(core::FlowStateManager* flow_state,
                                   const core::Leadership* leadership,
                                   Options options, Metrics* metrics,
                                   RefusedReports* refused)
    : flow_state_(flow_state),
      leadership_(leadership),
      options_(options),
      metrics_(Metrics::OrDiscard(metrics)),
      refused_(refused) {}

void HeartbeatHandler::Refuse(uint64_t node, IgnoredReason reason,
                              const absl::Status& why) {
  metrics_->ReportIgnored(reason);
  if (refused_ != nullptr) refused_->Refused(node, why);
  LogLimited(spdlog::level::warn, "report_refused", absl::StrCat(node),
             "refused a flownode's report: {}", std::string(why.message()));
}

absl::StatusOr<MergeResult> HeartbeatHandler::MergeFlowStat(
    ParsedHeartbeat parsed, std::optional<uint64_t> state_term) {
  const bool has_report = parsed.has_report;
  if (parsed.role != greptime::v1::meta::FLOWNODE) {
    if (parsed.heartbeat.ok() && parsed.heartbeat->cluster_node.has_value()) {
      absl::Status recorded =
          flow_state_->RecordNode(*parsed.heartbeat->cluster_node, state_term);
      if (!recorded.ok()) return recorded;
    }
    if (!has_report) return MergeResult::kNoFlowStat;
    metrics_->ReportIgnored(IgnoredReason::kNotFlownode);
    return MergeResult::kNotFlownode;
  }
  const std::optional<uint64_t> node = parsed.node_id;
  if (!node.has_value()) {
    if (!has_report) return MergeResult::kNoFlowStat;
    spdlog::debug("flow stat without header or peer ignored");
    metrics_->ReportIgnored(IgnoredReason::kNoNodeId);
    return MergeResult::kNoNodeId;
  }
  absl::StatusOr<core::NodeHeartbeat>& heartbeat = parsed.heartbeat;
  if (!heartbeat.ok()) {
    Refuse(*node,
           parsed.refusal == ReportRefusal::kTooManyFlows
               ? IgnoredReason::kTooManyFlows
               : IgnoredReason::kMalformed,
           heartbeat.status());
    return heartbeat.status();
  }
  const absl::Time start = absl::Now();
  std::optional<uint64_t> evicted;
  absl::Status recorded = flow_state_->Heartbeat(*node, *std::move(heartbeat),
                                                 state_term, &evicted);
  if (evicted.has_value()) {
    metrics_->NodeEvicted();
    LogLimited(spdlog::level::warn, "node_evicted", "",
               "flownode {} (no report within its silence limit, the "
               "quietest) forgotten to make room for flownode {}: "
               "--max_nodes is reached",
               *evicted, *node);
  }
  if (!recorded.ok()) {
    if (absl::IsAborted(recorded) && has_report) {
      metrics_->ReportIgnored(IgnoredReason::kNotLeader);
    }
    if (absl::IsResourceExhausted(recorded)) {
      Refuse(*node, IgnoredReason::kOverCapacity, recorded);
    }
    return recorded;
  }
  if (!has_report) return MergeResult::kNoFlowStat;
  if (refused_ != nullptr) refused_->Merged(*node);
  metrics_->ReportMerged(absl::Now() - start, parsed.report_bytes);
  return MergeResult::kMerged;
}

uint64_t HeartbeatHandler::IntervalFor(int role) const {
  return role == greptime::v1::meta::FRONTEND
             ? absl::ToInt64Milliseconds(options_.heartbeat_interval) *
                   kFrontendIntervalFactor
             : absl::ToInt64Milliseconds(options_.heartbeat_interval);
}

absl::Status HeartbeatHandler::Handle(ParsedHeartbeat parsed, bool handshake,
                                      const Admission& admission,
                                      HeartbeatResponse* response,
                                      const std::string& origin) {
  // What a node says about itself was checked and bounded as it was read.
  const int role = parsed.role;
  const bool has_report = parsed.has_report;
  metrics_->HeartbeatReceived(role);
  response->Clear();
  response->mutable_header()->set_protocol_version(1);
  // Every handshake answer carries the config, the not-leader one included.
  if (handshake) {
    auto* config = response->mutable_heartbeat_config();
    config->set_heartbeat_interval_ms(IntervalFor(role));
    config->set_retry_interval_ms(
        absl::ToInt64Milliseconds(options_.retry_interval));
  }
  const bool serve = admission.kind == Admission::Kind::kServe;
  if (serve) {
    if (parsed.heartbeat.ok()) parsed.heartbeat->origin = origin;
    absl::StatusOr<MergeResult> merged =
        MergeFlowStat(std::move(parsed), admission.state_term);
    // kAborted: leadership was lost while merging; answer as a follower.
    if (merged.ok() || !absl::IsAborted(merged.status())) {
      return merged.status();
    }
  }
  if (has_report && !serve) {
    metrics_->ReportIgnored(IgnoredReason::kNotLeader);
  }
  SetNotLeader(*leadership_, response->mutable_header());
  return absl::AbortedError(response->header().error().err_msg());
}

}  // namespace metasrv::server
