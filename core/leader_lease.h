// How long a leader may act on its lease (etcd's, or a SQL lease row), seen
// from its own side.
#ifndef METASRV_CORE_LEADER_LEASE_H_
#define METASRV_CORE_LEADER_LEASE_H_

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "core/clock.h"
#include "kv/mutex.h"

namespace metasrv::core {

// The lease of time-to-live TTL is kept alive every TTL/3, and each keep-alive
// may take up to TTL/3. When a keep-alive sent at time `s` is acknowledged,
// etcd extended the lease after `s`, so it cannot expire before `s + TTL`.
// The leader acts only until `s + 2*TTL/3` after its last acknowledged
// keep-alive: TTL/3 before etcd could hand leadership to another replica.
// See docs/HA.md.
//
// Every time here is on the clock's monotonic time (Clock::Monotonic()): a
// step of the wall clock must not stretch leadership past what etcd granted.
//
// Thread safety: all methods are safe from any thread.
class LeaderLease {
 public:
  // Borrows `clock`.
  LeaderLease(const Clock* clock, absl::Duration ttl);

  // How often to send keep-alives, and how long each may take: TTL/3.
  absl::Duration ttl() const { return ttl_; }
  absl::Duration keepalive_interval() const { return ttl_ / 3; }

  // A grant or keep-alive sent at `sent` (monotonic) was acknowledged with
  // time left.
  void Confirmed(absl::Time sent);
  // Forgets every confirmation (the lease is gone).
  void Lost();
  // Whether a leader may still act now.
  bool Valid() const;
  // Until when (monotonic) it may act; InfinitePast() when it may not.
  absl::Time valid_until() const;
  // Until when (monotonic) the lease certainly still exists in the store:
  // `s + TTL` less kRateMargin of the TTL for the two clocks' rates. A
  // leader whose keep-alives fail keeps trying until then, and steps down
  // only then: a keep-alive that gets through before it finds the lease
  // (and so its leadership) unbroken, and it acts again without a reset.
  // InfinitePast() when there is no lease.
  absl::Time held_until() const;
  static constexpr double kRateMargin = 0.05;

 private:
  const Clock* const clock_;  // Time source; borrowed.
  const absl::Duration ttl_;  // The lease's time-to-live.
  mutable Mutex mu_;          // Guards valid_until_.
  absl::Time valid_until_ ABSL_GUARDED_BY(mu_) =
      absl::InfinitePast();  // See Valid().
  absl::Time held_until_ ABSL_GUARDED_BY(mu_) =
      absl::InfinitePast();  // See held_until().
};

}  // namespace metasrv::core

#endif  // METASRV_CORE_LEADER_LEASE_H_
