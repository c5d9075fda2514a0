// Memory per stored (node, flow) entry: RSS growth of the flow-state core
// after merging N nodes x F flows, before and after the aggregate's JSON is
// built by a read.
//   memory_bench --nodes=10000 --flows=100
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "core/flow_state_manager.h"

ABSL_FLAG(int, nodes, 10000, "flownodes");
ABSL_FLAG(int, flows, 100, "flows per node (each node owns its own)");

namespace {

long RssBytes() {
  std::ifstream statm("/proc/self/statm");
  long pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * sysconf(_SC_PAGESIZE);
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const int nodes = absl::GetFlag(FLAGS_nodes), flows = absl::GetFlag(FLAGS_flows);
  const long before = RssBytes();
  metasrv::core::FlowStateManager manager(
      metasrv::core::FlowStateLimits::None());
  for (int n = 0; n < nodes; ++n) {
    metasrv::core::FlowStateValue::Builder b;
    for (int f = 0; f < flows; ++f) {
      const uint32_t id = static_cast<uint32_t>(n * flows + f);
      b.SetStateSize(id, 1000000 + id).SetLastExecTime(id, 1733000000000 + id);
    }
    if (!manager.Merge(n, b.Build()).ok()) return 1;
  }
  const long merged = RssBytes();
  const size_t json = manager.Get(std::string("__flow/state"))->size();
  const long read = RssBytes();
  const double entries = static_cast<double>(nodes) * flows;
  std::printf(
      "RESULT {\"nodes\":%d,\"flows\":%d,\"bytes_per_entry\":%.1f,"
      "\"bytes_per_entry_after_read\":%.1f,\"aggregate_json_bytes\":%zu}\n",
      nodes, flows, (merged - before) / entries, (read - before) / entries, json);
  return 0;
}
