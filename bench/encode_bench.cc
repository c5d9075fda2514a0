// GetFlowState's answer for some flows (issue 60: one encoder of a
// GetFlowStateResponse): the column encoder, which now answers every read,
// against the field-by-field protobuf build it replaced (kept here only as
// the reference), both serialized to bytes. An aggregate of 100,000 flows
// on 1,000 flownodes; 10, 1,000 and 50,000 flows asked, with and without
// the node columns. CPU time is the encoding thread's.
//
//   build/bench/encode_bench --benchmark_repetitions=15
//       --benchmark_enable_random_interleaving=true --benchmark_min_time=0.2
//       --benchmark_report_aggregates_only=true
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "core/flow_state_manager.h"
#include "metasrv/v1/metasrv.pb.h"
#include "server/codec/flow_state_columns.h"
#include "tests/server/codec/built_flow_state.h"

namespace metasrv::server {
namespace {

constexpr int kFlows = 100000;
constexpr int kFlowsPerNode = 100;

const core::FlowStateManager& Aggregate() {
  static const core::FlowStateManager* state = [] {
    auto* m = new core::FlowStateManager(core::FlowStateLimits::None());
    for (int node = 0; node < kFlows / kFlowsPerNode; ++node) {
      core::FlowStateValue::Builder b;
      for (int f = 0; f < kFlowsPerNode; ++f) {
        const uint32_t id = node * kFlowsPerNode + f;
        b.SetStateSize(id, (id * 2654435761u) % 1000000);
        b.SetLastExecTime(id, 1700000000000 + (id * 40503u) % 900000);
      }
      if (!m->Merge(node, b.Build()).ok()) std::abort();
    }
    return m;
  }();
  return *state;
}

// `n` ids spread over the aggregate.
std::vector<uint32_t> Asked(int n) {
  std::vector<uint32_t> ids;
  for (int i = 0; i < n; ++i) ids.push_back((i * 7919u) % kFlows);
  return ids;
}

// Bytes of protobuf's answer (SharedPieces have theirs in shared_bytes.h).
size_t LengthOf(const std::string& bytes) { return bytes.size(); }

// Times `encode(manager, ids, with_nodes)`, which returns the answer's bytes
// in the form the transport is handed, over the arguments (flows asked,
// with the node columns); counts the answer's size.
template <typename Encode>
void Time(benchmark::State& state, Encode encode) {
  const core::FlowStateManager& m = Aggregate();
  const std::vector<uint32_t> ids = Asked(static_cast<int>(state.range(0)));
  const bool with_nodes = state.range(1) != 0;
  size_t bytes = 0;
  for (auto _ : state) {
    auto answer = encode(m, ids, with_nodes);
    bytes = LengthOf(answer);
    benchmark::DoNotOptimize(answer.data());
  }
  state.counters["bytes"] = static_cast<double>(bytes);
}

// The pieces the transport is handed (it copies them into its buffer, as it
// does the one piece of protobuf's bytes below).
void BM_Columns(benchmark::State& state) {
  Time(state, [](const core::FlowStateManager& m,
                 const std::vector<uint32_t>& ids, bool with_nodes) {
    return ToPieces(EncodeFlowStateColumns(m, ids, with_nodes));
  });
}

void BM_ProtobufBuild(benchmark::State& state) {
  Time(state, [](const core::FlowStateManager& m,
                 const std::vector<uint32_t>& ids, bool with_nodes) {
    return BuiltFlowState(m, with_nodes, ids).SerializeAsString();
  });
}

BENCHMARK(BM_Columns)->ArgsProduct({{10, 1000, 50000}, {0, 1}});
BENCHMARK(BM_ProtobufBuild)->ArgsProduct({{10, 1000, 50000}, {0, 1}});

}  // namespace
}  // namespace metasrv::server

BENCHMARK_MAIN();
