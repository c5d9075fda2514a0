// What the alerting metrics show, computed at scrape time from the
// aggregate and the flownode records.
#ifndef METASRV_SERVER_OPS_FLOW_ALERTS_H_
#define METASRV_SERVER_OPS_FLOW_ALERTS_H_

#include <cstdint>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
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
// only to pin the chunks) and over its flownode records. `keep`: stalled
// flows to keep in the lagging list (FlowRanker). Thread-safe as `state` is;
// costs O(flows * log top_flows + nodes).
FlowAlerts ComputeFlowAlerts(const core::FlowStateManager& state,
                             absl::Time now, const FlowAlertOptions& options,
                             absl::flat_hash_set<uint32_t> keep = {});

// The alerts of each scrape, remembering which stalled flows the last one
// listed: such a flow keeps its metasrv_flow_exec_lag_seconds series while it
// stays stalled, even when more flows lag more than it (a `for:` timer on it
// would restart otherwise).
//
// Thread safety: Compute() is safe from any thread; concurrent scrapes are
// computed one after another.
class FlowAlertsSource {
 public:
  // `state` is borrowed and must outlive this.
  FlowAlertsSource(const core::FlowStateManager* state,
                   FlowAlertOptions options)
      : state_(state), options_(options) {}

  FlowAlerts Compute(absl::Time now) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  const core::FlowStateManager* const state_;  // The aggregate; borrowed.
  const FlowAlertOptions options_;             // N and the thresholds.
  absl::Mutex mu_;  // One computation at a time; guards listed_.
  // The stalled flows the last computation listed.
  absl::flat_hash_set<uint32_t> listed_ ABSL_GUARDED_BY(mu_);
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_OPS_FLOW_ALERTS_H_
