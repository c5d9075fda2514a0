#include "server/codec/node_identity.h"

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include <cstdlib>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"

#include "server/codec/node_info_proto.h"
#include "server/ops/log_limit.h"

namespace metasrv::server {
namespace {

// OpenSSL's SipHash MAC, fetched once; never freed.
EVP_MAC* SipHash() {
  static EVP_MAC* const mac = [] {
    EVP_MAC* fetched = EVP_MAC_fetch(nullptr, "SIPHASH", nullptr);
    if (fetched == nullptr) std::abort();  // OpenSSL 3 always has it.
    return fetched;
  }();
  return mac;
}

}  // namespace

uint64_t FrontendNodeId(absl::string_view addr) {
  EVP_MAC_CTX* ctx = EVP_MAC_CTX_new(SipHash());
  static constexpr unsigned char kKey[16] = {};
  size_t size = 8;
  unsigned int c_rounds = 1, d_rounds = 3;
  OSSL_PARAM params[] = {
      OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_SIZE, &size),
      OSSL_PARAM_construct_uint(OSSL_MAC_PARAM_C_ROUNDS, &c_rounds),
      OSSL_PARAM_construct_uint(OSSL_MAC_PARAM_D_ROUNDS, &d_rounds),
      OSSL_PARAM_construct_end()};
  unsigned char out[8] = {};
  size_t written = 0;
  static constexpr unsigned char kStrEnd = 0xff;
  const bool ok =
      ctx != nullptr && EVP_MAC_init(ctx, kKey, sizeof(kKey), params) == 1 &&
      EVP_MAC_update(ctx, reinterpret_cast<const unsigned char*>(addr.data()),
                     addr.size()) == 1 &&
      EVP_MAC_update(ctx, &kStrEnd, 1) == 1 &&
      EVP_MAC_final(ctx, out, &written, sizeof(out)) == 1 && written == 8;
  EVP_MAC_CTX_free(ctx);
  if (!ok) std::abort();  // Only out of memory.
  uint64_t id = 0;        // Little-endian, as Rust's SipHasher finishes.
  for (int i = 7; i >= 0; --i) id = id << 8 | out[i];
  return id;
}

std::optional<core::ClusterNode> ClusterNodeOf(
    const greptime::v1::meta::RequestHeader* header,
    const greptime::v1::meta::Peer* peer,
    const greptime::v1::meta::NodeInfo* info) {
  if (header == nullptr || peer == nullptr || info == nullptr) {
    return std::nullopt;
  }
  core::ClusterNode node;
  switch (header->role()) {
    case greptime::v1::meta::DATANODE:
      node.role = core::NodeRole::kDatanode;
      break;
    case greptime::v1::meta::FRONTEND:
      node.role = core::NodeRole::kFrontend;
      break;
    case greptime::v1::meta::FLOWNODE:
      node.role = core::NodeRole::kFlownode;
      break;
    default:
      return std::nullopt;
  }
  node.peer_id = peer->id();
  node.peer_addr = peer->addr();
  node.node_id = node.role == core::NodeRole::kFrontend
                     ? FrontendNodeId(node.peer_addr)
                     : node.peer_id;
  node.info = FromProto(*info);
  return node;
}

void SetEnvVars(absl::string_view extension, core::ClusterNode* node) {
  auto vars = core::ParseEnvVars(extension);
  if (vars.ok()) {
    node->env_vars = *std::move(vars);
    return;
  }
  node->env_vars.clear();
  const std::string subject = absl::StrCat(node->node_id);
  LogLimited(spdlog::level::warn, "env_vars_malformed", subject,
             "node {} ({}): its environment variables are read as none: {}",
             node->node_id, node->peer_addr,
             std::string(vars.status().message()));
}

}  // namespace metasrv::server
