// The one SQL LeaseStore: Open, Acquire, Put, Release and Scan written once,
// over a SqlSession (one connection: libpq in postgres_session, MariaDB
// Connector/C in mysql_session) and its dialect's statements. The dialects
// differ only in how they connect and in the text of five statements.
#ifndef METASRV_SERVER_ELECTION_SQL_LEASE_STORE_H_
#define METASRV_SERVER_ELECTION_SQL_LEASE_STORE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "server/election/lease_store.h"

namespace metasrv::server {

// One connection to a database. Every call returns by its deadline. Errors:
// kUnavailable (retry: down, timed out, connection lost) or
// kFailedPrecondition (it will never work: credentials, TLS, no such
// database), naming the database; on any error the session is closed.
// Thread safety: none (its store's).
class SqlSession {
 public:
  struct Result {
    uint64_t affected = 0;                       // Rows written or deleted.
    std::vector<std::vector<std::string>> rows;  // What a SELECT returned.
  };

  virtual ~SqlSession() = default;
  // Whether a connection is open and usable.
  virtual bool open() const = 0;
  // Connects with `options` (address, TLS, password).
  virtual absl::Status Connect(const LeaseStoreOptions& options,
                               absl::Time deadline) = 0;
  // Runs `sql` with $1, $2, ... bound to `params` (as text).
  virtual absl::StatusOr<Result> Run(const std::string& sql,
                                     const std::vector<std::string>& params,
                                     absl::Time deadline) = 0;
  // `name` as a quoted identifier of this dialect.
  virtual absl::StatusOr<std::string> QuoteIdentifier(
      const std::string& name) = 0;
  virtual void Close() = 0;
};

// A dialect's statements. `$table` is the quoted table; $1.. the
// parameters: key, holder, value and the TTL in microseconds for acquire
// and put (acquire writes only a row that is free, expired or the
// holder's, and affects none otherwise); key and holder for release; the
// LIKE pattern for scan, whose rows are (key, value, microseconds left).
struct SqlDialect {
  // Run after each connect: the server gives up on a statement when we do
  // (`timeout`), and whatever else the statements need.
  std::string (*session_setup)(absl::Duration timeout);
  const char* create_table;
  const char* acquire;
  const char* put;
  const char* release;
  const char* scan;
};

class SqlLeaseStore final : public LeaseStore {
 public:
  // Owns `session`; `dialect` must outlive the store (a constant).
  SqlLeaseStore(LeaseStoreOptions options, std::unique_ptr<SqlSession> session,
                const SqlDialect* dialect)
      : options_(std::move(options)),
        session_(std::move(session)),
        dialect_(dialect) {}

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
  void Close() override { session_->Close(); }
  void SetPassword(std::string password) override {
    options_.password = std::move(password);
  }

 private:
  // Opens, then runs `sql` (its $table replaced) by `timeout` from now.
  absl::StatusOr<SqlSession::Result> OpenAndRun(
      const char* sql, const std::vector<std::string>& params,
      absl::Duration timeout);
  // Opens, connecting by `deadline`.
  absl::Status OpenBy(absl::Duration timeout, absl::Time deadline);

  LeaseStoreOptions options_;            // As given (the password may change).
  std::unique_ptr<SqlSession> session_;  // Owned.
  const SqlDialect* const dialect_;      // A constant.
  std::string table_;                    // The table, quoted.
};

// The stores of each dialect (postgres_session.cc, mysql_session.cc).
std::unique_ptr<LeaseStore> MakePostgresLeaseStore(LeaseStoreOptions options);
std::unique_ptr<LeaseStore> MakeMysqlLeaseStore(LeaseStoreOptions options);

}  // namespace metasrv::server

#endif  // METASRV_SERVER_ELECTION_SQL_LEASE_STORE_H_
