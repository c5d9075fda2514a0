// What the alerting metrics show, computed at scrape time from the
// aggregate and the flownode records.
#ifndef METASRV_SERVER_OPS_FLOW_ALERTS_H_
#define METASRV_SERVER_OPS_FLOW_ALERTS_H_

#include <cstdint>
#include <vector>

#include "absl/time/time.h"
#include "core/flow_ranking.h"
#include "core/flow_state_manager.h"

namespace metasrv::server {

struct FlowAlertOptions {
  size_t top_flows = 20;  // N of the per-flow series; 0: none.
  absl::Duration stall_after = absl::Minutes(5);    // A flow is stalled.
  absl::Duration silent_after = absl::Seconds(30);  // A flownode is silent.
};

// Upper bounds (seconds) of the lag histogram's buckets.
const std::vector<double>& LagBuckets();

struct FlowAlerts {
  core::FlowRanking ranking;        // Top flows, stalled count, lag spread.
  uint64_t silent_nodes = 0;        // Flownodes silent past silent_after.
  double max_silence_seconds = 0;   // The longest silence of any flownode.
  double stall_after_seconds = 0;   // The thresholds in force, exported so
  double silent_after_seconds = 0;  // that alert rules use the same ones.
};

// One pass over a snapshot of `state` (FlowStateManager::Visit: its lock held
// only to pin the chunks) and over its flownode records. Thread-safe as
// `state` is; costs O(flows * log top_flows + nodes).
FlowAlerts ComputeFlowAlerts(const core::FlowStateManager& state,
                             absl::Time now, const FlowAlertOptions& options);

}  // namespace metasrv::server

#endif  // METASRV_SERVER_OPS_FLOW_ALERTS_H_
