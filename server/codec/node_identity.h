// How GreptimeDB names a node in its cluster info (NodeInfoKey::new in
// src/common/meta/src/cluster.rs): a frontend by a hash of its address, any
// other node by its peer id.
#ifndef METASRV_SERVER_CODEC_NODE_IDENTITY_H_
#define METASRV_SERVER_CODEC_NODE_IDENTITY_H_

#include <cstdint>
#include <optional>

#include "absl/strings/string_view.h"
#include "core/cluster_info.h"
#include "greptime/v1/meta/heartbeat.pb.h"

namespace metasrv::server {

// Upstream's calculate_node_id: Rust's DefaultHasher (SipHash-1-3 with zero
// keys) over the address as `str::hash` feeds it (its bytes, then 0xff).
// Thread-safe.
uint64_t FrontendNodeId(absl::string_view addr);

// The cluster info a heartbeat with `header`, `peer` and `info` carries
// (null: the field is absent): set when it has a header with a known role,
// a peer and a NodeInfo (upstream's extract_base_info), without workloads
// or environment variables.
std::optional<core::ClusterNode> ClusterNodeOf(
    const greptime::v1::meta::RequestHeader* header,
    const greptime::v1::meta::Peer* peer,
    const greptime::v1::meta::NodeInfo* info);

// Sets `node`'s environment variables from the bytes of a heartbeat's
// core::kEnvVarsExtension (core::ParseEnvVars). Bytes that are not EnvVars
// are logged as a warning (rate-limited, per node) and read as none, as
// upstream reads them.
void SetEnvVars(absl::string_view extension, core::ClusterNode* node);

// The whole cluster info of a request (a HeartbeatRequest, or the server's
// metasrv.v1.HeartbeatFrame, which has the same fields): with the
// workloads of its own role (a flownode's or a frontend's) and its
// environment variables.
template <typename Request>
std::optional<core::ClusterNode> ClusterNodeOf(const Request& request) {
  std::optional<core::ClusterNode> node =
      ClusterNodeOf(request.has_header() ? &request.header() : nullptr,
                    request.has_peer() ? &request.peer() : nullptr,
                    request.has_info() ? &request.info() : nullptr);
  if (!node.has_value()) return node;
  const google::protobuf::RepeatedField<int32_t>* types = nullptr;
  if (node->role == core::NodeRole::kFlownode && request.has_flownode()) {
    types = &request.flownode().types();
  } else if (node->role == core::NodeRole::kFrontend &&
             request.has_frontend()) {
    types = &request.frontend().types();
  }
  if (types != nullptr) node->workloads.assign(types->begin(), types->end());
  auto env = request.extensions().find(std::string(core::kEnvVarsExtension));
  if (env != request.extensions().end()) SetEnvVars(env->second, &*node);
  return node;
}

}  // namespace metasrv::server

#endif  // METASRV_SERVER_CODEC_NODE_IDENTITY_H_
