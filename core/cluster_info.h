// GreptimeDB's cluster info in the in-memory KV: what every node's heartbeat
// says about the node, under `__meta_cluster_node_info-0-{role}-{node_id}`,
// which frontends list with a Range over the prefix to answer
// `information_schema.cluster_info`. The key, the roles' numbers and the
// value's bytes follow upstream: `NodeInfoKey`, `NodeInfo` and `NodeStatus`
// in src/common/meta/src/cluster.rs, written by
// src/meta-srv/src/handler/collect_cluster_info_handler.rs.
#ifndef METASRV_CORE_CLUSTER_INFO_H_
#define METASRV_CORE_CLUSTER_INFO_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/flownode_record.h"

namespace metasrv::core {

// GreptimeDB's node roles, with the numbers its keys use.
enum class NodeRole : int32_t { kDatanode = 0, kFrontend = 1, kFlownode = 2 };

// The prefix of every cluster-info key.
inline constexpr absl::string_view kClusterInfoPrefix =
    "__meta_cluster_node_info-0-";

// `__meta_cluster_node_info-0-{role}-{node_id}`.
std::string ClusterInfoKey(NodeRole role, uint64_t node_id);

// One node as a heartbeat that carries a header, a peer and a NodeInfo
// describes it.
struct ClusterNode {
  NodeRole role = NodeRole::kFlownode;  // Its role.
  // The key's id: the peer's id, or for a frontend a hash of its address
  // (upstream's calculate_node_id; the caller computes it).
  uint64_t node_id = 0;
  uint64_t peer_id = 0;   // The peer's id, as sent.
  std::string peer_addr;  // The peer's address, as sent.
  NodeInfo info;          // What it says about itself.
  // The workload types its heartbeat gave for its own role, as sent and in
  // order (upstream's get_flownode_workloads / get_frontend_workloads);
  // empty when it gave none or another role's. Written for flownodes and
  // frontends; a datanode's status is written without it.
  std::vector<int32_t> workloads;
  // Its environment variables, name and value, each name once, in the
  // order first sent (ParseEnvVars).
  std::vector<std::pair<std::string, std::string>> env_vars;
};

// The heartbeat extension a node's environment variables come in
// (upstream's EnvVars::ENV_VARS_KEY in src/common/meta/src/datanode.rs).
inline constexpr absl::string_view kEnvVarsExtension = "__env_vars";

// The most bytes of that extension that are read; a larger one is read as
// no variables. It bounds what a node's cluster info keeps as the node
// strings' limit does.
inline constexpr size_t kMaxEnvVarsBytes = 4096;

// The variables in `json`, read as serde_json reads upstream's
// `EnvVars { vars: HashMap<String, String> }` from the extension's bytes:
// an object whose "vars" member (exactly one; other members are ignored) is
// an object of strings, or serde's sequence form, an array of that one
// object; a name given twice keeps its last value. Each name appears once,
// where it first appeared.
// - kInvalidArgument naming what is wrong: not valid UTF-8, not JSON, or
//   not of that shape; or more than kMaxEnvVarsBytes.
// Thread-safe.
absl::StatusOr<std::vector<std::pair<std::string, std::string>>> ParseEnvVars(
    absl::string_view json);

// The value upstream writes for `node` seen at `last_activity_ms` (unix ms),
// byte for byte as serde_json serializes NodeInfo: fields in declaration
// order, the status an externally tagged enum, strings escaped as serde_json
// escapes them; a flownode's and a frontend's status with its workloads,
// and its environment variables as serde_json writes a map of strings.
std::string EncodeClusterNodeInfo(const ClusterNode& node,
                                  int64_t last_activity_ms);

}  // namespace metasrv::core

#endif  // METASRV_CORE_CLUSTER_INFO_H_
