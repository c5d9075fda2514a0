// Benchmarks of the flow-state core: Merge cost against cluster size, and the
// cost of reading the aggregate.
//
//   build/bench/merge_bench --benchmark_repetitions=5
//       --benchmark_report_aggregates_only=true
#include <cstdint>
#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "benchmark/benchmark.h"
#include "core/flow_state_codec.h"
#include "core/flow_state_manager.h"

namespace metasrv::core {
namespace {

constexpr int kFlowsPerNode = 10;

// Node `node`'s report. With `shared`, every node reports flows 0..9 (each
// flow has `nodes` contributors); otherwise node n owns flows 10n..10n+9, as
// when each flow runs on one flownode. `round` varies the values.
FlowStateValue NodeReport(uint64_t node, int64_t round, bool shared) {
  FlowStateValue::Builder b;
  b.Reserve(2 * kFlowsPerNode);
  for (int f = 0; f < kFlowsPerNode; ++f) {
    const uint32_t id = shared ? f : static_cast<uint32_t>(node * kFlowsPerNode + f);
    // Sizes go up and down; times move forward.
    b.SetStateSize(id, 1000 + static_cast<uint64_t>((node * 7 + round * 13 + f) % 4096));
    b.SetLastExecTime(id, 1700000000000 + round * 1000 + static_cast<int64_t>(node % 1000));
  }
  return b.Build();
}

struct Cluster {
  FlowStateManager manager{FlowStateLimits::None()};
};

std::unique_ptr<Cluster> MakeCluster(int64_t nodes, bool shared) {
  auto c = std::make_unique<Cluster>();
  for (int64_t n = 0; n < nodes; ++n) {
    if (!c->manager.Merge(n, NodeReport(n, 0, shared)).ok()) std::abort();
  }
  return c;
}

// One 10-flow heartbeat merged into a cluster of state.range(0) nodes. With
// `pinned`, a reader holds a snapshot of the whole aggregate (untimed) across
// every merge, so each merge copies the chunk view it changes: the worst case
// of one-instant reads for a writer.
void MergeInto(benchmark::State& state, bool shared, bool pinned = false) {
  const int64_t nodes = state.range(0);
  std::unique_ptr<Cluster> c = MakeCluster(nodes, shared);
  // Precomputed reports (several rounds per node) so the loop times Merge.
  constexpr int kRounds = 4;
  std::vector<FlowStateValue> reports;
  const int64_t pool = std::min<int64_t>(nodes, 2048);
  for (int r = 1; r <= kRounds; ++r) {
    for (int64_t n = 0; n < pool; ++n) reports.push_back(NodeReport(n, r, shared));
  }
  size_t i = 0;
  FlowStateManager::AggregateSnapshot held;
  for (auto _ : state) {
    if (pinned) {
      state.PauseTiming();
      held = c->manager.Snapshot();
      state.ResumeTiming();
    }
    const uint64_t node = i % pool;
    FlowStateValue report = reports[i % reports.size()];
    if (!c->manager.Merge(node, std::move(report)).ok()) std::abort();
    ++i;
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_Merge(benchmark::State& state) { MergeInto(state, false); }
void BM_MergeSharedFlows(benchmark::State& state) { MergeInto(state, true); }
void BM_MergeWhileReadHeld(benchmark::State& state) {
  MergeInto(state, false, true);
}
BENCHMARK(BM_Merge)->Arg(10)->Arg(1000)->Arg(10000)->Arg(100000);
BENCHMARK(BM_MergeWhileReadHeld)->Arg(10)->Arg(1000)->Arg(10000);

// The reference algorithm, for the chart: GreptimeDB's metasrv on every
// report writes the node's key, then reads every node's key back, decodes
// each, takes the max per flow and writes the whole aggregate. Here over a
// plain map of node JSON (no KV locking at all), so it is a lower bound of
// that algorithm's cost.
void BM_ReferenceMerge(benchmark::State& state) {
  const int64_t nodes = state.range(0);
  std::map<uint64_t, std::string> keys;
  for (int64_t n = 0; n < nodes; ++n) {
    keys[n] = EncodeFlowState(NodeReport(n, 0, false));
  }
  std::string aggregate;
  int64_t round = 1;
  for (auto _ : state) {
    const uint64_t node = round % nodes;
    keys[node] = EncodeFlowState(NodeReport(node, round, false));
    std::map<uint32_t, FlowStat> max;
    for (const auto& [id, json] : keys) {
      absl::StatusOr<FlowStateValue> report = DecodeFlowState(json);
      if (!report.ok()) std::abort();
      for (const FlowStat& s : report->flows()) {
        FlowStat& m = max[s.flow_id];
        if (m.fields == 0) m = s;
        m.state_size = std::max(m.state_size, s.state_size);
        m.last_exec_time = std::max(m.last_exec_time, s.last_exec_time);
      }
    }
    FlowStateValue::Builder b;
    for (const auto& [id, m] : max) b.Set(m);
    aggregate = EncodeFlowState(b.Build());
    benchmark::DoNotOptimize(aggregate);
    ++round;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ReferenceMerge)->Arg(10)->Arg(100)->Arg(1000)->Arg(10000);
BENCHMARK(BM_MergeSharedFlows)->Arg(10)->Arg(1000)->Arg(10000);

// The KV read of `__flow/state` (state.range(0) flows) after one 10-flow
// merge: the steady state, where a read re-encodes only the chunk that
// changed.
void BM_GetAfterMerge(benchmark::State& state) {
  const int64_t nodes = state.range(0) / kFlowsPerNode;
  std::unique_ptr<Cluster> c = MakeCluster(nodes, false);
  int64_t round = 1;
  for (auto _ : state) {
    if (!c->manager.Merge(round % nodes, NodeReport(round % nodes, round, false)).ok()) {
      std::abort();
    }
    ++round;
    auto v = c->manager.Get(std::string("__flow/state"));
    benchmark::DoNotOptimize(v);
  }
}
BENCHMARK(BM_GetAfterMerge)->Arg(1000)->Arg(100000)->Unit(benchmark::kMicrosecond);

// Makes every chunk of a `flows`-flow aggregate changed since the last read:
// a node that owns no flow of the others touches one flow in every chunk.
void TouchEveryChunk(Cluster& c, int64_t flows, int64_t round) {
  FlowStateValue::Builder b;
  for (int64_t id = 0; id < flows; id += 1024) {
    b.SetStartTime(static_cast<uint32_t>(id), round);
  }
  if (!c.manager.Merge(uint64_t{1} << 40, b.Build()).ok()) std::abort();
}

// The typed Get() when every chunk changed since the last read.
void BM_GetCold(benchmark::State& state) {
  const int64_t flows = state.range(0);
  std::unique_ptr<Cluster> c = MakeCluster(flows / kFlowsPerNode, false);
  int64_t round = 1;
  for (auto _ : state) {
    TouchEveryChunk(*c, flows, round++);
    auto v = c->manager.Aggregate();
    benchmark::DoNotOptimize(v);
  }
}
BENCHMARK(BM_GetCold)->Arg(1000)->Arg(100000)->Unit(benchmark::kMicrosecond);

// The raw KV read of `__flow/state` when every chunk changed: encoding only.
void BM_RawReadCold(benchmark::State& state) {
  const int64_t flows = state.range(0);
  std::unique_ptr<Cluster> c = MakeCluster(flows / kFlowsPerNode, false);
  int64_t round = 1;
  for (auto _ : state) {
    TouchEveryChunk(*c, flows, round++);
    auto v = c->manager.Get(std::string("__flow/state"));
    benchmark::DoNotOptimize(v);
  }
}
BENCHMARK(BM_RawReadCold)->Arg(1000)->Arg(100000)->Unit(benchmark::kMicrosecond);

// The typed read GetFlowState uses, of all flows.
void BM_ReadAll(benchmark::State& state) {
  std::unique_ptr<Cluster> c = MakeCluster(state.range(0) / kFlowsPerNode, false);
  for (auto _ : state) {
    auto v = c->manager.Read({});
    benchmark::DoNotOptimize(v);
  }
}
BENCHMARK(BM_ReadAll)->Arg(1000)->Arg(100000)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace metasrv::core

int main(int argc, char** argv) {
  // As in the server: no lock-order graph bookkeeping on the hot path.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
