// The leader state both elections share: whether this replica leads and in
// which flow-state term, whom the store names leader, the live candidates,
// the lease that bounds acting as leader, the transitions (through the
// LeadershipListener, which resets the flow state), and the store's health
// as logged. Each election keeps only how it talks to its store.
#ifndef METASRV_SERVER_ELECTION_LEADER_STATE_H_
#define METASRV_SERVER_ELECTION_LEADER_STATE_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/clock.h"
#include "core/leader_lease.h"
#include "core/leadership.h"
#include "core/metasrv_node_info.h"
#include "server/ops/metrics.h"

namespace metasrv::server {

// Thread safety: all methods are safe from any thread. Transitions are
// serialized; a `may_lead` check runs inside that serialization, so it may
// take its election's own lock (never the other way round).
class LeaderState {
 public:
  // Borrows `clock` and `listener`; they must outlive it. `store_name`
  // ("etcd", "PostgreSQL", ...) is for logs.
  LeaderState(std::string self_addr, std::string store_name,
              const core::Clock* clock, absl::Duration lease_ttl,
              core::LeadershipListener* listener);

  // Leading, and the lease still valid: the term to act in; else none.
  core::Leadership::Term CurrentTerm() const;
  // Whether this replica leads (however long its lease has left).
  bool leading() const;

  // Whom the store names leader, until `until` (monotonic; past it, the
  // leader it names may be gone): what LeaderAddr() answers for a follower.
  // Empty `addr`: none. Also counts as an answer of the store (see
  // ReportHealth).
  void SetObserved(std::string addr, absl::Time until = absl::InfiniteFuture());
  // The leader: this replica when it leads, else the one observed, unless
  // its time has passed or the store has not answered (SetObserved, an OK
  // ReportHealth) for longer than the lease TTL: then none (stale).
  struct Named {
    std::string addr;    // Empty: none known.
    bool stale = false;  // One was observed, but its time has passed.
  };
  Named Leader() const;

  // The live candidates, this replica's included, sorted by address.
  void SetPeers(std::vector<core::MetasrvNodeInfo> peers);
  std::vector<core::MetasrvNodeInfo> Peers() const;
  std::vector<std::string> FollowerAddrs() const;

  // Becomes leader, unless `may_lead()` says no or the lease is not valid
  // (the confirmation came back too late): resets the flow state through
  // the listener first, then leads. True if it did.
  bool BecomeLeader(const std::function<bool()>& may_lead);
  // Stops leading (if it did): not leading from here on, then the
  // listener ends the streams and drops the state. Returns the keys
  // dropped (0 if it did not lead).
  uint64_t StepDown(const char* why);

  // Logs `status` when the store's health changed since the last report
  // (kCancelled, our own doing, is not a change). OK: the store answered
  // now.
  void ReportHealth(const absl::Status& status);
  bool healthy() const;
  // Health (how long unhealthy, the last error), the failures reported so
  // far, and the lease left when leading.
  StoreHealth Health() const;

  core::LeaderLease& lease() { return lease_; }
  const core::LeaderLease& lease() const { return lease_; }
  const core::Clock* clock() const { return clock_; }
  const std::string& self_addr() const { return self_addr_; }

 private:
  const std::string self_addr_;               // This replica's address.
  const std::string store_name_;              // For logs.
  const core::Clock* const clock_;            // Time; borrowed.
  core::LeadershipListener* const listener_;  // Transition hooks; borrowed.
  core::LeaderLease lease_;                   // How long we may act as leader.

  absl::Mutex transition_mu_;  // Serializes BecomeLeader and StepDown.
  // Guards the fields below; taken alone or inside transition_mu_.
  mutable absl::Mutex mu_ ABSL_ACQUIRED_AFTER(transition_mu_);
  bool leading_ ABSL_GUARDED_BY(mu_) = false;     // We lead.
  uint64_t state_term_ ABSL_GUARDED_BY(mu_) = 0;  // Flow-state term we lead in.
  std::string observed_ ABSL_GUARDED_BY(mu_);     // The store's leader.
  // Until when (monotonic) observed_ holds.
  absl::Time observed_until_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
  // When (monotonic) the store last answered.
  absl::Time last_contact_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  // The live candidates, by address.
  std::vector<core::MetasrvNodeInfo> peers_ ABSL_GUARDED_BY(mu_);
  bool healthy_ ABSL_GUARDED_BY(mu_) = true;  // For ReportHealth().
  // While not healthy_: when (monotonic) the outage began, the last error.
  absl::Time unhealthy_since_ ABSL_GUARDED_BY(mu_);
  std::string last_error_ ABSL_GUARDED_BY(mu_);
  uint64_t errors_ ABSL_GUARDED_BY(mu_) = 0;  // Failures reported.
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_ELECTION_LEADER_STATE_H_
