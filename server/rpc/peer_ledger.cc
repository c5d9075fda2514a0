#include "server/rpc/peer_ledger.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace metasrv::server {

absl::string_view PeerLedger::HostOf(absl::string_view peer) {
  // gRPC writes "ipv4:A.B.C.D:PORT", "ipv6:[ADDR]:PORT" (or with the
  // brackets percent-encoded) and "unix:PATH": the port follows the last
  // colon of an IP peer.
  if (peer.substr(0, 5) == "unix:") return "unix";
  const size_t colon = peer.rfind(':');
  if (colon == absl::string_view::npos || colon < 5) return peer;
  return peer.substr(0, colon);
}

absl::StatusOr<PeerLedger::Ticket> PeerLedger::Enter(absl::string_view peer,
                                                     bool* per_peer) {
  const absl::string_view host = HostOf(peer);
  bool unused;
  if (per_peer == nullptr) per_peer = &unused;
  *per_peer = false;
  absl::MutexLock lock(&mu_);
  if (limits_.max_calls != 0 &&
      static_cast<uint64_t>(calls_) >= limits_.max_calls) {
    return absl::ResourceExhaustedError(
        absl::StrCat("the server has ", calls_,
                     " calls open, its limit (--max_calls); "
                     "retry later"));
  }
  auto [it, inserted] = peers_.try_emplace(host);
  if (inserted) {
    it->second = std::make_unique<Peer>();
    it->second->host = std::string(host);
  }
  Peer* entry = it->second.get();
  if (limits_.max_calls_per_peer != 0 &&
      static_cast<uint64_t>(entry->calls) >= limits_.max_calls_per_peer) {
    *per_peer = true;
    return absl::ResourceExhaustedError(absl::StrCat(
        "this client's host has ", entry->calls,
        " calls open, its limit (--max_calls_per_peer); retry later"));
  }
  ++entry->calls;
  ++calls_;
  return Ticket(this, entry);
}

void PeerLedger::Leave(Peer* peer) {
  absl::MutexLock lock(&mu_);
  --calls_;
  if (--peer->calls > 0) return;
  // Its last call: the entry goes, so that the map holds only peers with a
  // call open.
  peers_.erase(peers_.find(peer->host));
}

int64_t PeerLedger::open_calls() const {
  absl::MutexLock lock(&mu_);
  return calls_;
}

size_t PeerLedger::peers() const {
  absl::MutexLock lock(&mu_);
  return peers_.size();
}

}  // namespace metasrv::server
