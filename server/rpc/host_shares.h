// Pools of the gRPC port shared by client host (PeerAddress::host),
// for the transport: the request bytes it holds, and the resets a host's
// streams make the server send.
#ifndef METASRV_SERVER_RPC_HOST_SHARES_H_
#define METASRV_SERVER_RPC_HOST_SHARES_H_

#include <cstdint>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace metasrv::server {

// Bytes held, bounded over all hosts and shared max-min: below the bound
// anyone takes; at it, a host still takes while it holds less than its fair
// share (the bound over the hosts holding bytes, itself counted), and the
// host holding the most, over its share, owes as much back (Owed()): its
// connections end calls holding bytes until it is paid, at their next tick.
// So a host under its share is never refused because another holds more,
// and only a host over its share gives anything back. Thread-safe.
class HostBudget {
 public:
  explicit HostBudget(int64_t limit) : limit_(limit) {}
  // Takes `bytes` for `host`; false (nothing taken) when it may not.
  bool Take(const std::string& host, int64_t bytes) ABSL_LOCKS_EXCLUDED(mu_);
  // Gives back what Take() took; pays what the host owes first.
  void Give(const std::string& host, int64_t bytes) ABSL_LOCKS_EXCLUDED(mu_);
  // Bytes `host` owes to hosts under their share that took past the bound.
  int64_t Owed(const std::string& host) const ABSL_LOCKS_EXCLUDED(mu_);
  int64_t held() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Held {
    int64_t bytes = 0;
    int64_t owed = 0;
  };
  const int64_t limit_;
  mutable absl::Mutex mu_;  // Guards the fields below.
  int64_t total_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<std::string, Held> by_host_ ABSL_GUARDED_BY(mu_);
};

// Bytes the hosts' compressed requests inflated to within the current
// second, bounded over all hosts and shared max-min as HostBudget is: once
// the second's bound is spent, a host may inflate only while it inflated
// less than its share (the bound over the hosts that inflated this second,
// itself counted). So a flood of compression bombs (a few kB that inflate
// to the message bound) costs the CPU of the bound a second, and the hosts
// that inflate a little (a flownode's heartbeats) are never refused for it.
// Thread-safe.
class HostInflation {
 public:
  explicit HostInflation(int64_t per_second) : limit_(per_second) {}
  // Whether `host` may inflate a request at `now`.
  bool May(const std::string& host, absl::Time now) ABSL_LOCKS_EXCLUDED(mu_);
  // `host` inflated `bytes` at `now`.
  void Charge(const std::string& host, int64_t bytes, absl::Time now)
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // Starts a new second at `now` if the current one is over.
  void Roll(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const int64_t limit_;
  absl::Mutex mu_;  // Guards the fields below.
  absl::Time second_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  int64_t total_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<std::string, int64_t> by_host_ ABSL_GUARDED_BY(mu_);
};

// Where a call's inflation is charged: its host's key in the transport's
// HostInflation (null: not bounded).
struct InflateGate {
  HostInflation* share = nullptr;
  const std::string* host = nullptr;
};

// A token bucket per host for the resets its streams make the server send
// (stream errors nghttp2 answers with a reset): `burst`, refilled at `rate`
// a second, shared by every connection of the host, so reconnecting
// refills nothing. A host that empties it is
// cut: its connection is closed, and new ones are closed at accept for the
// next kSlowed. Thread-safe.
class HostResets {
 public:
  HostResets(double burst, double rate) : burst_(burst), rate_(rate) {}
  // One reset of `host` at `now`; false when the host is over its budget.
  bool Take(const std::string& host, absl::Time now) ABSL_LOCKS_EXCLUDED(mu_);
  // Whether `host` may open a connection at `now`.
  bool Allowed(const std::string& host, absl::Time now)
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  static constexpr absl::Duration kSlowed = absl::Seconds(1);
  struct Bucket {
    double tokens;
    absl::Time at;
    absl::Time slowed_until = absl::InfinitePast();
  };
  // Refills `b` to `now`.
  void Refill(Bucket* b, absl::Time now) const;

  const double burst_;
  const double rate_;
  absl::Mutex mu_;  // Guards buckets_.
  // Hosts whose bucket is not full; full ones are forgotten.
  absl::flat_hash_map<std::string, Bucket> buckets_ ABSL_GUARDED_BY(mu_);
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_RPC_HOST_SHARES_H_
