// GreptimeDB's cluster info in the in-memory KV: what every node's heartbeat
// says about the node, under `__meta_cluster_node_info-0-{role}-{node_id}`,
// which frontends list with a Range over the prefix to answer
// `information_schema.cluster_info`. The key, the roles' numbers and the
// value's bytes follow upstream: `NodeInfoKey`, `NodeInfo` and `NodeStatus`
// in src/common/meta/src/cluster.rs, written by
// src/meta-srv/src/handler/collect_cluster_info_handler.rs.
#ifndef METASRV_CORE_CLUSTER_INFO_H_
#define METASRV_CORE_CLUSTER_INFO_H_

#include <cstdint>
#include <string>

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
};

// The value upstream writes for `node` seen at `last_activity_ms` (unix ms),
// byte for byte as serde_json serializes NodeInfo: fields in declaration
// order, the status an externally tagged enum, strings escaped as serde_json
// escapes them. Node workloads and environment variables are written as
// upstream writes them for a heartbeat that carries none (empty).
std::string EncodeClusterNodeInfo(const ClusterNode& node,
                                  int64_t last_activity_ms);

}  // namespace metasrv::core

#endif  // METASRV_CORE_CLUSTER_INFO_H_
