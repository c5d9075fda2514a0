#include "server/ops/flow_alerts.h"

#include <algorithm>
#include <utility>

namespace metasrv::server {

const std::vector<double>& LagBuckets() {
  // From a heartbeat's seconds to a day: where "running", "late" and
  // "stalled for hours" fall apart.
  static const auto* const buckets = new std::vector<double>{
      1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600, 86400};
  return *buckets;
}

FlowAlerts ComputeFlowAlerts(const core::FlowStateManager& state,
                             absl::Time now, const FlowAlertOptions& options,
                             absl::flat_hash_set<uint32_t> keep) {
  FlowAlerts out;
  out.stall_after_seconds = absl::ToDoubleSeconds(options.stall_after);
  out.silent_after_seconds = absl::ToDoubleSeconds(options.silent_after);
  core::FlowRanker ranker(now, options.top_flows, options.stall_after,
                          LagBuckets(), std::move(keep));
  state.Visit({}, [&](absl::Span<const core::AggregateFlow> flows) {
    for (const core::AggregateFlow& flow : flows) ranker.Add(flow);
  });
  out.ranking = ranker.Finish();
  const int64_t now_ms = absl::ToUnixMillis(now);
  const int64_t silent_ms = absl::ToInt64Milliseconds(options.silent_after);
  for (const core::FlownodeView& node : state.ListFlownodes({})) {
    const int64_t silence =
        std::max<int64_t>(0, now_ms - node.record.last_heartbeat_ms);
    if (silence > silent_ms) ++out.silent_nodes;
    out.max_silence_seconds =
        std::max(out.max_silence_seconds, silence / 1000.0);
  }
  return out;
}

FlowAlerts FlowAlertsSource::Compute(absl::Time now) {
  absl::MutexLock lock(&mu_);
  FlowAlerts alerts =
      ComputeFlowAlerts(*state_, now, options_, std::move(listed_));
  listed_ = alerts.ranking.stalled_listed;
  return alerts;
}

}  // namespace metasrv::server
