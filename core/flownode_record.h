// What the leader knows about one flownode besides its report: where it is,
// when it was last heard from, and what it says about itself. Kept by the
// store with the node's report (ListFlownodes() lists it); the KV shows what
// GreptimeDB's metasrv would, the node's cluster info (cluster_info.h).
#ifndef METASRV_CORE_FLOWNODE_RECORD_H_
#define METASRV_CORE_FLOWNODE_RECORD_H_

#include <cstdint>
#include <optional>
#include <string>

namespace metasrv::core {

// A node's description of itself (GreptimeDB's NodeInfo, minus deprecated
// fields).
struct NodeInfo {
  std::string version;               // Its version string.
  std::string git_commit;            // The commit it was built from.
  uint64_t start_time_ms = 0;        // When it started, unix ms.
  std::string hostname;              // Its host name.
  int64_t total_cpu_millicores = 0;  // CPU it may use.
  int64_t total_memory_bytes = 0;    // Memory it may use.
  int64_t cpu_usage_millicores = 0;  // CPU it uses now.
  int64_t memory_usage_bytes = 0;    // Memory it uses now.
  bool operator==(const NodeInfo& o) const;
};

// The one list of NodeInfo's fields, with their names (GreptimeDB's protobuf
// names): calls `f(name, info.field...)` for each field in order, over one or
// more infos at once. Equality and the protobuf conversions go through it.
template <typename F, typename... Infos>
void ForEachNodeInfoField(F&& f, Infos&... infos) {
  f("version", infos.version...);
  f("git_commit", infos.git_commit...);
  f("start_time_ms", infos.start_time_ms...);
  f("hostname", infos.hostname...);
  f("total_cpu_millicores", infos.total_cpu_millicores...);
  f("total_memory_bytes", infos.total_memory_bytes...);
  f("cpu_usage_millicores", infos.cpu_usage_millicores...);
  f("memory_usage_bytes", infos.memory_usage_bytes...);
}

// One flownode's record.
struct FlownodeRecord {
  std::string peer_addr;          // Its address; empty until it sent a peer.
  int64_t last_heartbeat_ms = 0;  // Its latest heartbeat, unix ms.
  int64_t last_report_ms = 0;     // Its latest report, unix ms; 0: none.
  std::optional<NodeInfo> info;   // Its latest NodeInfo, if it sent one.
  bool operator==(const FlownodeRecord& o) const;
};

}  // namespace metasrv::core

#endif  // METASRV_CORE_FLOWNODE_RECORD_H_
