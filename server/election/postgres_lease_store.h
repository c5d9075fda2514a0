// Leases in a PostgreSQL table, through libpq's non-blocking interface.
#ifndef METASRV_SERVER_ELECTION_POSTGRES_LEASE_STORE_H_
#define METASRV_SERVER_ELECTION_POSTGRES_LEASE_STORE_H_

#include <memory>
#include <string>
#include <vector>

#include "server/election/lease_store.h"

struct pg_conn;
struct pg_result;

namespace metasrv::server {

// The table: (k TEXT PRIMARY KEY, holder TEXT, v TEXT, expires_at
// TIMESTAMPTZ); expiry is clock_timestamp() + TTL on the server. A taking
// or renewing Acquire is one INSERT .. ON CONFLICT DO UPDATE .. WHERE the
// row is ours or expired, which PostgreSQL runs under the row's lock.
//
// TLS: [backend_tls] maps onto libpq's sslmode, sslrootcert, sslcert and
// sslkey, after (so over) what the address says; mode disable leaves it to
// the address. Every call is bounded by its timeout on our side
// (poll on the socket) and by statement_timeout on the server's.
class PostgresLeaseStore final : public LeaseStore {
 public:
  explicit PostgresLeaseStore(LeaseStoreOptions options);
  ~PostgresLeaseStore() override;

  absl::Status Open(absl::Duration timeout) override;
  absl::StatusOr<bool> Acquire(const std::string& key,
                               const std::string& holder,
                               const std::string& value, absl::Duration ttl,
                               absl::Duration timeout) override;
  absl::Status Put(const std::string& key, const std::string& holder,
                   const std::string& value, absl::Duration ttl,
                   absl::Duration timeout) override;
  absl::Status Release(const std::string& key, const std::string& holder,
                       absl::Duration timeout) override;
  absl::StatusOr<std::vector<Entry>> Scan(const std::string& prefix,
                                          absl::Duration timeout) override;
  void Close() override;
  void SetPassword(std::string password) override {
    options_.password = std::move(password);
  }

 private:
  struct ResultDeleter {
    void operator()(pg_result* r) const;
  };
  using Result = std::unique_ptr<pg_result, ResultDeleter>;

  // Connects until `deadline`.
  absl::Status Connect(absl::Time deadline);
  // Runs `sql` with text `params` until `deadline`: its last result.
  // Closes the session on any error.
  absl::StatusOr<Result> Run(const std::string& sql,
                             const std::vector<std::string>& params,
                             absl::Time deadline);
  // An error for the session's last failure (kFailedPrecondition when it
  // is about credentials, TLS or the database itself); closes the session.
  absl::Status Fail(const std::string& what, pg_result* result);
  // Opens, then runs `sql` until `timeout` from now.
  absl::StatusOr<Result> OpenAndRun(const std::string& sql,
                                    const std::vector<std::string>& params,
                                    absl::Duration timeout);

  LeaseStoreOptions options_;  // As given (the password may change).
  pg_conn* conn_ = nullptr;    // The session; null when closed.
  std::string table_;          // The table name, quoted.
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_ELECTION_POSTGRES_LEASE_STORE_H_
