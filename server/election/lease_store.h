// One session with a SQL database that keeps leases in a table: the store
// under LeaseElection. SqlLeaseStore implements it over PostgreSQL and
// MySQL sessions (sql_lease_store.h).
#ifndef METASRV_SERVER_ELECTION_LEASE_STORE_H_
#define METASRV_SERVER_ELECTION_LEASE_STORE_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace metasrv::server {

// Where and how to reach the database (GreptimeDB's store_addrs and
// [backend_tls]).
struct LeaseStoreOptions {
  // PostgreSQL: a libpq connection string or URI. MySQL:
  // mysql://user:password@host:port/database.
  std::string address;
  std::string table = "metasrv_election";  // The lease table.
  // TLS: "" or disable (the address decides), prefer, require, verify_ca,
  // verify_full; PEM file paths.
  std::string tls_mode;
  std::string ca_path, cert_path, key_path;
  // The password, over the address's; empty: the address's (or none).
  std::string password;
};

// A lease: a row (key, holder, value, expiry). Expiry is always computed and
// compared on the database's clock, in one statement, so that the replicas'
// clocks never matter.
//
// Every call connects first if needed and returns within `timeout` of its
// start: kUnavailable (retry: down, timed out, connection lost; the session
// is then dropped and the next call reconnects) or kFailedPrecondition (it
// will never work: authentication, TLS, an unknown database).
//
// Thread safety: none. One thread uses a store at a time.
class LeaseStore {
 public:
  struct Entry {
    std::string key;    // Row key.
    std::string value;  // Its value (an advertised address).
    // How long the row still lives, on the database's clock when read.
    absl::Duration remaining = absl::ZeroDuration();
  };

  virtual ~LeaseStore() = default;

  // Connects (if not connected) and creates the lease table if missing.
  virtual absl::Status Open(absl::Duration timeout) = 0;
  // Takes `key` for `holder`, or renews it: succeeds only if no row exists,
  // the row has expired, or `holder` holds it. Sets its value and its expiry
  // to the database's now + `ttl`. Returns whether `holder` holds it now.
  virtual absl::StatusOr<bool> Acquire(const std::string& key,
                                       const std::string& holder,
                                       const std::string& value,
                                       absl::Duration ttl,
                                       absl::Duration timeout) = 0;
  // Writes `key` for `holder` unconditionally (candidate rows).
  virtual absl::Status Put(const std::string& key, const std::string& holder,
                           const std::string& value, absl::Duration ttl,
                           absl::Duration timeout) = 0;
  // Deletes `key` if `holder` holds it. OK when there was nothing to delete.
  virtual absl::Status Release(const std::string& key,
                               const std::string& holder,
                               absl::Duration timeout) = 0;
  // The unexpired rows whose key starts with `prefix`, by key.
  virtual absl::StatusOr<std::vector<Entry>> Scan(const std::string& prefix,
                                                  absl::Duration timeout) = 0;
  // Drops the session (the next call reconnects).
  virtual void Close() = 0;
  // The password of the next connection (the open session stays).
  virtual void SetPassword(std::string password) = 0;
};

// Waits until `fd` is readable (`read`) and/or writable (`write`), until
// `deadline` (absl::Now()-based). Returns poll's revents, 0 on timeout, or
// -1 on a poll error. Shared by the stores' non-blocking loops.
int WaitForSocket(int fd, bool read, bool write, absl::Time deadline);

// The LIKE pattern matching every key that starts with `prefix` (escapes
// %, _ and the escape character '!'; use with ESCAPE '!').
std::string LikePrefix(const std::string& prefix);

}  // namespace metasrv::server

#endif  // METASRV_SERVER_ELECTION_LEASE_STORE_H_
