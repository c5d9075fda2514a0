// What every leader election offers the server: a Leadership it can start,
// stop and hand over. Implementations: EtcdElection (etcd's Election
// service) and LeaseElection (a lease row in PostgreSQL or MySQL).
#ifndef METASRV_SERVER_ELECTION_ELECTION_H_
#define METASRV_SERVER_ELECTION_ELECTION_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/leadership.h"
#include "server/ops/metrics.h"

namespace metasrv::server {

// Lifecycle: CheckAccess() (optional), Start() once, Stop() once (the
// destructor calls it). At most one replica of a cluster leads at any
// instant, a leader that cannot renew steps down before another can lead,
// and every change of leadership goes through LeadershipListener (which
// resets the flow state). docs/HA.md argues it per backend.
//
// Thread safety: all methods are safe from any thread.
class Election : public core::Leadership {
 public:
  // Whether the store can be used as configured: OK; kFailedPrecondition if
  // it never will be (wrong password, CA, database, address syntax);
  // kUnavailable if not now (down, unreachable). Call before Start().
  virtual absl::Status CheckAccess(absl::Duration timeout) = 0;
  // Starts campaigning on the election's own threads.
  virtual void Start() = 0;
  // Steps down if leading, hands leadership over at once where the store
  // allows, and stops campaigning. Idempotent.
  virtual void Stop() = 0;
  // Gives leadership to another replica: steps down (dropping all state)
  // and campaigns again behind the other candidates. Returns the keys
  // dropped. kFailedPrecondition when not leading.
  virtual absl::StatusOr<uint64_t> Resign() = 0;
  // The store's health and the leader's lease, for the metrics.
  virtual StoreHealth Health() const = 0;
  // The store password from now on (its file was re-read): etcd's next
  // login, or the database's next connection, uses it; the session open now
  // stays. Safe during Start()..Stop().
  virtual void SetPassword(std::string password) = 0;
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_ELECTION_ELECTION_H_
