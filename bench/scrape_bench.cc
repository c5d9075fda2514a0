// The cost of a /metrics scrape with the alerting metrics (issue 18):
// Metrics::Scrape() over an aggregate of 1,000 to 100,000 flows, with the
// per-flow series on (--metrics_top_flows=20) and off, against a scrape
// without any flow metrics. CPU time is the scraping thread's.
//
//   build/bench/scrape_bench --benchmark_repetitions=5
//       --benchmark_report_aggregates_only=true
#include <cstdint>
#include <memory>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "benchmark/benchmark.h"
#include "core/flow_state_manager.h"
#include "server/ops/flow_alerts.h"
#include "server/ops/metrics.h"

namespace metasrv::server {
namespace {

constexpr int kFlowsPerNode = 100;

// `flows` flows on flows/100 flownodes, 100 each (each flow on one node),
// with sizes and execution times spread out.
std::unique_ptr<core::FlowStateManager> Aggregate(int flows) {
  auto state = std::make_unique<core::FlowStateManager>(
      core::FlowStateLimits::None());
  const int64_t now = absl::ToUnixMillis(absl::Now());
  for (int node = 0; node < flows / kFlowsPerNode; ++node) {
    core::FlowStateValue::Builder b;
    for (int f = 0; f < kFlowsPerNode; ++f) {
      const uint32_t id = node * kFlowsPerNode + f;
      b.SetStateSize(id, (id * 2654435761u) % 1000000);
      b.SetLastExecTime(id, now - (id * 40503u) % 900000);
    }
    if (!state->Merge(node, b.Build()).ok()) std::abort();
  }
  return state;
}

// range(0): flows; range(1): top N, or -1 for no flow metrics at all.
void BM_Scrape(benchmark::State& st) {
  const auto state = Aggregate(static_cast<int>(st.range(0)));
  Metrics::Sources sources;
  if (st.range(1) >= 0) {
    FlowAlertOptions options;
    options.top_flows = static_cast<size_t>(st.range(1));
    sources.flow_alerts = [&state, options] {
      return ComputeFlowAlerts(*state, absl::Now(), options);
    };
  }
  // Every scrape built afresh: the build is what is measured.
  Metrics metrics(std::move(sources), absl::ZeroDuration());
  size_t bytes = 0;
  for (auto _ : st) {
    std::string text = metrics.Scrape();
    bytes = text.size();
    benchmark::DoNotOptimize(text);
  }
  st.counters["bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_Scrape)
    ->ArgsProduct({{1000, 10000, 100000}, {-1, 0, 20}})
    ->ArgNames({"flows", "top"})
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace metasrv::server

BENCHMARK_MAIN();
