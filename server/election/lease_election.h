// Leader election on a SQL database (PostgreSQL or MySQL): the replicas
// compete for one lease row, renewed by its holder.
#ifndef METASRV_SERVER_ELECTION_LEASE_ELECTION_H_
#define METASRV_SERVER_ELECTION_LEASE_ELECTION_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "core/clock.h"
#include "server/election/election.h"
#include "server/election/leader_state.h"
#include "server/election/lease_store.h"

namespace metasrv::server {

struct LeaseElectionOptions {
  std::string store_name;  // "PostgreSQL" or "MySQL", for logs.
  // The election's name (with the key prefix); its rows are
  // "<name>/leader" and "<name>/candidate/<holder>".
  std::string name;       // --store_key_prefix and --election_name.
  std::string self_addr;  // Our value: advertised address.
  // The rows' time-to-live (--lease_ttl; the setting declares its default).
  absl::Duration lease_ttl;
  // What our candidate row says about us (read each round); null: the
  // address only.
  std::function<core::MetasrvNodeInfo()> describe;
};

// Every TTL/3 the session thread, in order: takes or renews the leader row
// (LeaseStore::Acquire, atomic on the database), refreshes this replica's
// candidate row, and reads the leader and candidate rows. Each call is
// bounded by TTL/3. A renewal sent at `s` and acknowledged moved the row's
// expiry past `s + TTL` on the database's clock; the leader acts until
// `s + 2*TTL/3` (core::LeaderLease), and another replica can take the row
// only once it has expired. A failed round keeps leadership until that
// deadline, then steps down. See docs/HA.md.
//
// Thread safety: all public methods are safe from any thread. The store is
// used by one thread: CheckAccess() before Start(), the session thread after.
class LeaseElection final : public Election {
 public:
  // Owns `store`; borrows `clock` and `listener`, which must outlive it.
  LeaseElection(LeaseElectionOptions options, std::unique_ptr<LeaseStore> store,
                const core::Clock* clock, core::LeadershipListener* listener);
  ~LeaseElection() override;

  absl::Status CheckAccess(absl::Duration timeout) override;
  void Start() override;
  // Steps down, deletes the leader row (so a candidate leads within TTL/3)
  // and this replica's candidate row, and stops.
  void Stop() override;
  // Steps down, deletes the leader row, and stays out of the running for
  // two rounds so that another candidate takes it.
  absl::StatusOr<uint64_t> Resign() override;
  StoreHealth Health() const override { return state_.Health(); }
  // Handed to the store by the session thread before its next round.
  void SetPassword(std::string password) override;

  Term CurrentTerm() const override;
  // The leader row's value as last read, or empty when there is none or its
  // lease has passed since; then the session reads the store at once.
  std::string LeaderAddr() const override;
  std::vector<std::string> FollowerAddrs() const override;
  std::vector<core::MetasrvNodeInfo> Peers() const override;

 private:
  void SessionLoop();
  // One round; `sent` is when it began (monotonic).
  absl::Status Round(absl::Time sent);
  // On the way out: steps down and deletes this replica's rows.
  void Leave();
  void BecomeLeader();
  // Waits until `deadline` (monotonic), a resignation or Stop(). Returns
  // false when stopping.
  bool Wait(absl::Time deadline);

  const LeaseElectionOptions options_;       // As given.
  const std::string leader_key_;             // "<name>/leader".
  const std::string holder_;                 // This process's lease holder id.
  const core::Clock* const clock_;           // Time; borrowed.
  const std::unique_ptr<LeaseStore> store_;  // The session thread's.
  LeaderState state_;  // Leading, the leader, candidates, lease, transitions.

  // Guards the fields below; taken inside LeaderState's transitions.
  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;          // Stop() was called.
  bool resign_requested_ ABSL_GUARDED_BY(mu_) = false;  // Release the row.
  // Until when (monotonic) not to take the leader row, after a resignation.
  absl::Time yield_until_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  // When the last round began (monotonic).
  absl::Time last_round_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  // A reader met an expired leader row: read the store now.
  mutable bool refresh_requested_ ABSL_GUARDED_BY(mu_) = false;
  // A password for the store, not yet handed to it.
  std::optional<std::string> new_password_ ABSL_GUARDED_BY(mu_);
  std::thread session_thread_;  // Runs SessionLoop().
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_ELECTION_LEASE_ELECTION_H_
