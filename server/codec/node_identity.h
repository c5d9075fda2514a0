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
// a peer and a NodeInfo (upstream's extract_base_info).
std::optional<core::ClusterNode> ClusterNodeOf(
    const greptime::v1::meta::RequestHeader* header,
    const greptime::v1::meta::Peer* peer,
    const greptime::v1::meta::NodeInfo* info);

// The same for a request (a HeartbeatRequest, or the server's
// metasrv.v1.HeartbeatFrame, which has the same fields).
template <typename Request>
std::optional<core::ClusterNode> ClusterNodeOf(const Request& request) {
  return ClusterNodeOf(request.has_header() ? &request.header() : nullptr,
                       request.has_peer() ? &request.peer() : nullptr,
                       request.has_info() ? &request.info() : nullptr);
}

}  // namespace metasrv::server

#endif  // METASRV_SERVER_CODEC_NODE_IDENTITY_H_
