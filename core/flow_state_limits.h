// The bounds and expiries of the flow state, declared once: the server's
// settings of the same names (--max_nodes, --max_total_flows,
// --node_report_ttl, --node_max_idle_time) are these members, and their
// defaults are these defaults. FlowStateManager and FlowStateStore take the
// struct whole.
#ifndef METASRV_CORE_FLOW_STATE_LIMITS_H_
#define METASRV_CORE_FLOW_STATE_LIMITS_H_

#include <cstdint>

#include "absl/time/time.h"

namespace metasrv::core {

struct FlowStateLimits {
  // Nodes known at once, counted per role: flownodes (each with its record
  // and report), and, apart, the cluster-info keys of frontends, of
  // datanodes and of flownodes (a flownode's key follows its peer id). A
  // heartbeat that would add one past it is refused with
  // kResourceExhausted. 0: no limit.
  uint64_t max_nodes = 10000;
  // (node, flow) entries summed over every flownode's latest report: a
  // report that would grow the sum past it is refused with
  // kResourceExhausted. 0: no limit.
  uint64_t max_total_flows = 1000000;
  // A flownode silent for longer loses its report and record when
  // FlowStateManager::ExpireSilentNodes() runs. Zero: never (GreptimeDB's
  // behaviour).
  absl::Duration node_report_ttl = absl::ZeroDuration();
  // A node silent for longer loses its cluster info, and a flownode its
  // record (its flow state stays), when
  // FlowStateManager::ExpireIdleNodes() runs (GreptimeDB's
  // node_max_idle_time). Zero: never.
  absl::Duration node_max_idle_time = absl::Hours(24);

  // A flownode that reported within this long is live: at max_nodes it is
  // never forgotten to make room for a new one (FlowStateStore::Evictable).
  // The server sets it to the silence limit of a flownode's stream, three
  // of its told intervals and a retry (checked_options.cc), so a flownode
  // restarting faster than that keeps its flows.
  absl::Duration live_report_window = absl::Seconds(12);

  // No bound and no expiry (tests and benchmarks that measure the core
  // itself).
  static FlowStateLimits None() {
    FlowStateLimits none;
    none.max_nodes = 0;
    none.max_total_flows = 0;
    none.node_max_idle_time = absl::ZeroDuration();
    return none;
  }
};

}  // namespace metasrv::core

#endif  // METASRV_CORE_FLOW_STATE_LIMITS_H_
