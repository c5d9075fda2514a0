// Leader election on etcd: this replica campaigns through etcd's Lease and
// Election services; exactly one replica leads at a time.
#ifndef METASRV_SERVER_ELECTION_ETCD_ELECTION_H_
#define METASRV_SERVER_ELECTION_ETCD_ELECTION_H_

#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/clock.h"
#include "core/leadership.h"
#include "server/election/election.h"
#include "server/election/etcd_client.h"
#include "server/election/leader_state.h"

namespace metasrv::server {

struct EtcdElectionOptions {
  std::vector<std::string> endpoints;  // etcd client endpoints, host:port.
  // The election's name (--store_key_prefix and --election_name).
  std::string name;
  std::string self_addr;  // Our value: the advertised address.
  // Lease TTL (--lease_ttl; the setting declares its default); keep-alive
  // every TTL/3.
  absl::Duration lease_ttl;
  EtcdSecurity security;  // TLS and credentials for etcd.
  // What our peer key says about us (read every keep-alive); null: the
  // address only.
  std::function<core::MetasrvNodeInfo()> describe;
};

// Lifecycle: Start() once, Stop() once (the destructor calls it). Between
// them, a session thread holds a lease and campaigns, and an observer thread
// follows who leads. etcd errors are retried with backoff and logged once per
// change of state. See docs/HA.md for why two replicas never lead at once.
//
// Thread safety: all public methods are safe from any thread.
class EtcdElection final : public Election {
 public:
  // Borrows `clock` and `listener`; they must outlive the election.
  EtcdElection(EtcdElectionOptions options, const core::Clock* clock,
               core::LeadershipListener* listener);
  ~EtcdElection() override;

  // Whether etcd can be used as configured (EtcdClient::CheckAccess):
  // kFailedPrecondition if it never will be; kInvalidArgument if the
  // election's name nests with another election's on this etcd (etcd's
  // elections are prefixes, "<name>/": one cluster would wait behind, or
  // name, the other's leader). Call before Start().
  absl::Status CheckAccess(absl::Duration timeout) override;

  void Start() override;
  // Steps down if leading, hands leadership over at once (revokes the lease)
  // and stops campaigning. Idempotent.
  void Stop() override;

  Term CurrentTerm() const override;
  std::string LeaderAddr() const override;
  // From the peer keys as last read (every keep-alive), not from etcd.
  std::vector<std::string> FollowerAddrs() const override;
  std::vector<core::MetasrvNodeInfo> Peers() const override;

  // Gives leadership to another replica: steps down (dropping all state),
  // resigns in etcd, and campaigns again behind the other candidates.
  // Returns the keys dropped. kFailedPrecondition when not leading, or when
  // the candidate etcd would name next has not renewed its lease for half
  // a TTL (cut off from etcd: it could not lead, and nobody would until its
  // lease ran out); kUnavailable when etcd cannot say. Either way, nothing
  // changed.
  absl::StatusOr<uint64_t> Resign() override;
  StoreHealth Health() const override { return state_.Health(); }
  void SetPassword(std::string password) override {
    client_.SetPassword(std::move(password));
  }

 private:
  void SessionLoop();
  // Keeps `lease` alive until a keep-alive fails, Stop() or Resign().
  absl::Status KeepAliveLoop(int64_t lease);
  void CampaignLoop(int64_t lease);
  void ObserveLoop();
  // Registers our peer key and lists every replica's, every keep-alive
  // interval of a live session.
  void PeersLoop();
  // Writes our peer key on `lease` and reads every replica's into peers_;
  // false if etcd failed.
  bool RegisterAndListPeers(int64_t lease);
  // A campaign on `lease` won with `key`: leads once a keep-alive sent
  // after the win finds the lease; never on a session that ended.
  void ConfirmAndLead(int64_t lease, const v3electionpb::LeaderKey& key);
  void BecomeLeader(int64_t lease, const v3electionpb::LeaderKey& key);
  uint64_t StepDown(const char* why);
  // OK if the candidate after `ours` in etcd's line (by creation revision)
  // renewed its lease within half a TTL, or there is none.
  absl::Status CheckNextInLine(const v3electionpb::LeaderKey& ours);
  // Waits until `deadline` (monotonic), or until stopping (and, with `session`,
  // until the session ends). Returns false if interrupted.
  bool Wait(absl::Time deadline, bool session);

  const EtcdElectionOptions options_;  // As given.
  // The prefix of the peer keys: the name, a NUL (no flag can hold one, so
  // no election's "<name>/" prefix covers them) and "peers/".
  const std::string peers_prefix_;
  const core::Clock* const clock_;  // Time; borrowed.
  mutable EtcdClient client_;       // etcd connections.
  LeaderState state_;  // Leading, the leader, peers, lease, transitions.

  // Guards the fields below; taken inside LeaderState's transitions.
  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;  // Stop() was called.
  // Our key in the election while we lead.
  std::optional<v3electionpb::LeaderKey> leader_key_ ABSL_GUARDED_BY(mu_);
  int64_t session_lease_ ABSL_GUARDED_BY(mu_) = 0;  // The lease in use; 0 none.
  bool session_over_ ABSL_GUARDED_BY(mu_) = true;   // The session is ending.
  bool resign_requested_ ABSL_GUARDED_BY(mu_) =
      false;  // Resign() asked to end it.
  grpc::ClientContext* campaign_ctx_ ABSL_GUARDED_BY(mu_) =
      nullptr;  // To cancel.
  grpc::ClientContext* observe_ctx_ ABSL_GUARDED_BY(mu_) =
      nullptr;                  // To cancel.
  std::thread session_thread_;  // Runs SessionLoop().
  std::thread observe_thread_;  // Runs ObserveLoop().
  std::thread peers_thread_;    // Runs PeersLoop().
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_ELECTION_ETCD_ELECTION_H_
