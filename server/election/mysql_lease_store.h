// Leases in a MySQL or MariaDB table, through MariaDB Connector/C's
// non-blocking interface.
#ifndef METASRV_SERVER_ELECTION_MYSQL_LEASE_STORE_H_
#define METASRV_SERVER_ELECTION_MYSQL_LEASE_STORE_H_

#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "server/election/lease_store.h"
#include "server/ops/store_address.h"

struct st_mysql;

namespace metasrv::server {

// The table: (k VARBINARY PRIMARY KEY, holder, v, expires_at DATETIME(6)),
// times in UTC on the server. A taking or renewing Acquire is one INSERT ..
// ON DUPLICATE KEY UPDATE whose first assignment decides the holder (ours
// if it was ours or expired) and whose others follow it; InnoDB runs it
// under the row's lock. The session's sql_mode is set so that assignments
// run left to right (MariaDB's SIMULTANEOUS_ASSIGNMENT off).
//
// TLS: mode require, verify_ca or verify_full enforce TLS; verify_ca and
// verify_full also verify the server's certificate (and name) against the
// CA. Every call is bounded by its timeout (poll on the socket).
class MysqlLeaseStore final : public LeaseStore {
 public:
  explicit MysqlLeaseStore(LeaseStoreOptions options);
  ~MysqlLeaseStore() override;

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
  // Connects until `deadline`.
  absl::Status Connect(absl::Time deadline);
  // Runs `sql` until `deadline`; with `rows`, collects the first two
  // columns of its result. Returns the rows affected. Closes the session on
  // any error.
  absl::StatusOr<uint64_t> Run(const std::string& sql, absl::Time deadline,
                               std::vector<Entry>* rows = nullptr);
  // Opens, then runs what `sql` builds (with $table replaced) until
  // `timeout` from now.
  absl::StatusOr<uint64_t> OpenAndRun(absl::FunctionRef<std::string()> sql,
                                      absl::Duration timeout,
                                      std::vector<Entry>* rows = nullptr);
  // `s` as a quoted SQL string literal.
  std::string Quote(const std::string& s);
  // An error for the session's last failure; closes the session.
  absl::Status Fail(const std::string& what);

  LeaseStoreOptions options_;  // As given (the password may change).
  st_mysql* conn_ = nullptr;   // The session; null when closed.
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_ELECTION_MYSQL_LEASE_STORE_H_
