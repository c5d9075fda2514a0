// What each peer (a client's host) holds of the server: its calls open and
// the bytes of its answers not yet read. Every call is charged here when it
// is accepted, at its first HEADERS frame, before any of its work: past the
// bound on calls open at once, in all or from its peer, it is refused. An
// answer is charged to its peer's share of the reply budget as well as to
// the budget, so that one peer cannot hold the whole budget.
#ifndef METASRV_SERVER_RPC_PEER_LEDGER_H_
#define METASRV_SERVER_RPC_PEER_LEDGER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace metasrv::server {

// The bounds, from the settings --max_calls, --max_calls_per_peer and
// --max_reply_bytes_per_peer (server_options.h); 0: none.
struct PeerLimits {
  uint64_t max_calls = 0;                 // Calls open at once, in all.
  uint64_t max_calls_per_peer = 0;        // Calls open at once, per peer.
  uint64_t max_reply_bytes_per_peer = 0;  // A peer's unread answers' bytes.
};

// Thread-safe. Enter() and a ticket's end take the ledger's lock briefly;
// the reply share is lock-free.
class PeerLedger {
 public:
  class Ticket;

  explicit PeerLedger(PeerLimits limits) : limits_(limits) {}
  PeerLedger(const PeerLedger&) = delete;
  PeerLedger& operator=(const PeerLedger&) = delete;

  // The host part of gRPC's peer string ("ipv4:10.0.0.1:5000" ->
  // "ipv4:10.0.0.1", "ipv6:[::1]:5000" -> "ipv6:[::1]"): every connection
  // from one host is one peer.
  static absl::string_view HostOf(absl::string_view peer);

  // Charges a new call from `peer` (gRPC's peer string). kResourceExhausted,
  // saying which bound, when it would pass --max_calls or
  // --max_calls_per_peer (then `*per_peer`, when given, says whether it was
  // the peer's); nothing is charged then. The ticket gives the call back
  // when destroyed.
  absl::StatusOr<Ticket> Enter(absl::string_view peer, bool* per_peer = nullptr)
      ABSL_LOCKS_EXCLUDED(mu_);

  int64_t open_calls() const ABSL_LOCKS_EXCLUDED(mu_);
  // Peers with a call open.
  size_t peers() const ABSL_LOCKS_EXCLUDED(mu_);
  const PeerLimits& limits() const { return limits_; }

 private:
  struct Peer {
    std::string host;                      // Its key in peers_.
    int64_t calls = 0;                     // Open; guarded by the ledger's mu_.
    std::atomic<uint64_t> reply_bytes{0};  // Its answers in flight.
  };
  void Leave(Peer* peer) ABSL_LOCKS_EXCLUDED(mu_);

  const PeerLimits limits_;
  mutable absl::Mutex mu_;  // Guards peers_ and calls_.
  // By host; an entry lives while the host has a call open.
  absl::flat_hash_map<std::string, std::unique_ptr<Peer>> peers_
      ABSL_GUARDED_BY(mu_);
  int64_t calls_ ABSL_GUARDED_BY(mu_) = 0;  // Open, in all.
};

// One call's place in the ledger. Move-only; not thread-safe itself.
class PeerLedger::Ticket {
 public:
  Ticket(Ticket&& other) noexcept
      : ledger_(std::exchange(other.ledger_, nullptr)),
        peer_(std::exchange(other.peer_, nullptr)) {}
  Ticket& operator=(Ticket&&) = delete;
  ~Ticket() {
    if (ledger_ != nullptr) ledger_->Leave(peer_);
  }

  // Takes `bytes` of the peer's reply share if they fit; false (nothing
  // taken) if they do not.
  bool TakeReply(uint64_t bytes) {
    const uint64_t limit = ledger_->limits_.max_reply_bytes_per_peer;
    uint64_t held = peer_->reply_bytes.load(std::memory_order_relaxed);
    do {
      if (limit != 0 && held + bytes > limit) return false;
    } while (!peer_->reply_bytes.compare_exchange_weak(
        held, held + bytes, std::memory_order_relaxed));
    return true;
  }
  // Takes `bytes` of the peer's reply share whether or not they fit (an
  // answer that is always sent, counted so that the share tells the truth).
  void ChargeReply(uint64_t bytes) {
    peer_->reply_bytes.fetch_add(bytes, std::memory_order_relaxed);
  }
  // Gives back what TakeReply() or ChargeReply() took.
  void GiveReply(uint64_t bytes) {
    peer_->reply_bytes.fetch_sub(bytes, std::memory_order_relaxed);
  }
  // The peer's answers in flight now.
  uint64_t peer_reply_bytes() const {
    return peer_->reply_bytes.load(std::memory_order_relaxed);
  }

 private:
  friend class PeerLedger;
  Ticket(PeerLedger* ledger, Peer* peer) : ledger_(ledger), peer_(peer) {}

  PeerLedger* ledger_;  // Where the call is charged; borrowed.
  Peer* peer_;          // Its peer's entry; the ledger's.
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_RPC_PEER_LEDGER_H_
