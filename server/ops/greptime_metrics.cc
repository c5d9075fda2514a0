#include "server/ops/greptime_metrics.h"

namespace metasrv::server {
namespace {

// The Rust prometheus crate's default buckets, which upstream's histograms
// without their own use.
prometheus::Histogram::BucketBoundaries DefaultBuckets() {
  return {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0};
}

}  // namespace

GreptimeMetrics::GreptimeMetrics(prometheus::Registry* registry) {
  heartbeat_rate_ = &prometheus::BuildCounter()
                         .Name("greptime_meta_heartbeat_rate")
                         .Help("meta heartbeat arrival rate")
                         .Register(*registry)
                         .Add({});
  // Upstream's buckets, in bytes.
  stat_memory_size_ =
      &prometheus::BuildHistogram()
           .Name("greptime_meta_heartbeat_stat_memory_size")
           .Help("meta heartbeat stat memory size")
           .Register(*registry)
           .Add({}, prometheus::Histogram::BucketBoundaries{
                        100, 500, 1000, 1500, 2000, 3000, 5000, 10000, 20000});
  flow_state_handler_ =
      &prometheus::BuildHistogram()
           .Name("greptime_meta_handler_execute")
           .Help("meta handler execute")
           .Register(*registry)
           .Add({{"name", "FlowStateHandler"}}, DefaultBuckets());
  auto& kv = prometheus::BuildHistogram()
                 .Name("greptime_meta_kv_request_elapsed")
                 .Help("meta kv request")
                 .Register(*registry);
  kv_range_ =
      &kv.Add({{"target", "Memory"}, {"op", "range"}}, DefaultBuckets());
  kv_batch_get_ =
      &kv.Add({{"target", "Memory"}, {"op", "batch_get"}}, DefaultBuckets());
}

void GreptimeMetrics::ReportHandled(absl::Duration took, size_t bytes) {
  flow_state_handler_->Observe(absl::ToDoubleSeconds(took));
  stat_memory_size_->Observe(static_cast<double>(bytes));
}

void GreptimeMetrics::KvRequest(KvRead op, absl::Duration took) {
  (op == KvRead::kRange ? kv_range_ : kv_batch_get_)
      ->Observe(absl::ToDoubleSeconds(took));
}

}  // namespace metasrv::server
