#include "core/cluster_info.h"

#include "absl/strings/str_cat.h"
#include "core/json_text.h"

namespace metasrv::core {
namespace {

// NodeStatus, externally tagged: {"Variant":{fields}}.
absl::string_view Status(NodeRole role) {
  switch (role) {
    case NodeRole::kDatanode:
      // DatanodeStatus of a heartbeat without region stats.
      return R"({"Datanode":{"rcus":0,"wcus":0,"leader_regions":0,)"
             R"("follower_regions":0,"workloads":{"types":[]}}})";
    case NodeRole::kFrontend:
      // FrontendStatus of GreptimeDB main (PROTOCOL.md section 4).
      return R"({"Frontend":{"workloads":{"types":[]}}})";
    case NodeRole::kFlownode:
      break;
  }
  return R"({"Flownode":{"workloads":{"types":[]}}})";
}

}  // namespace

std::string ClusterInfoKey(NodeRole role, uint64_t node_id) {
  return absl::StrCat(kClusterInfoPrefix, static_cast<int32_t>(role), "-",
                      node_id);
}

std::string EncodeClusterNodeInfo(const ClusterNode& node,
                                  int64_t last_activity_ms) {
  const NodeInfo& info = node.info;
  std::string out;
  out.reserve(256 + node.peer_addr.size() + info.version.size() +
              info.git_commit.size() + info.hostname.size());
  absl::StrAppend(&out, R"({"peer":{"id":)", node.peer_id, R"(,"addr":)");
  AppendSerdeString(node.peer_addr, &out);
  absl::StrAppend(&out, R"(},"last_activity_ts":)", last_activity_ms,
                  R"(,"status":)", Status(node.role));
  AppendSerdeNodeInfoMembers(info, &out);
  out.append(R"(,"env_vars":{}})");
  return out;
}

}  // namespace metasrv::core
