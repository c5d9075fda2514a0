// GreptimeDB's own metasrv metrics, under its names, types and labels
// (src/meta-srv/src/metrics.rs in GreptimeTeam/greptimedb), for what this
// service does: the panels of GreptimeDB's cluster dashboard
// (grafana/dashboards/metrics/cluster/) that read them work unchanged.
//   greptime_meta_heartbeat_rate              counter: heartbeats received
//   greptime_meta_heartbeat_stat_memory_size  histogram: a flownode report's
//                                             encoded size, bytes
//   greptime_meta_handler_execute{name}       histogram: seconds a heartbeat
//                                             handler took (FlowStateHandler:
//                                             the merge of a report)
//   greptime_meta_kv_request_elapsed{target,op}  histogram: seconds a KV
//                                             read took (target "Memory",
//                                             op "range" or "batch_get")
// greptime_meta_heartbeat_connection_num (a gauge: heartbeat streams open)
// is read at scrape time with the other gauges (metrics.cc).
#ifndef METASRV_SERVER_OPS_GREPTIME_METRICS_H_
#define METASRV_SERVER_OPS_GREPTIME_METRICS_H_

#include <cstddef>

#include "absl/time/time.h"
#include "prometheus/counter.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace metasrv::server {

// A read of the in-memory KV, as GreptimeDB's Store service names them.
enum class KvRead { kRange, kBatchGet };

// Thread-safe; no method takes a lock of ours.
class GreptimeMetrics {
 public:
  // Registers the families in `registry`, which must outlive this.
  explicit GreptimeMetrics(prometheus::Registry* registry);

  void HeartbeatReceived() { heartbeat_rate_->Increment(); }
  // A flownode report of `bytes` was merged in `took`.
  void ReportHandled(absl::Duration took, size_t bytes);
  void KvRequest(KvRead op, absl::Duration took);

 private:
  prometheus::Counter* heartbeat_rate_;        // In the registry.
  prometheus::Histogram* stat_memory_size_;    // In the registry.
  prometheus::Histogram* flow_state_handler_;  // handler_execute's series.
  prometheus::Histogram* kv_range_;            // kv_request_elapsed, range.
  prometheus::Histogram* kv_batch_get_;        // Likewise, batch_get.
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_OPS_GREPTIME_METRICS_H_
