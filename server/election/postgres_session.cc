// The PostgreSQL session and dialect of SqlLeaseStore, through libpq's
// non-blocking interface.
//
// The table: (k TEXT PRIMARY KEY, holder TEXT, v TEXT, expires_at
// TIMESTAMPTZ); expiry is clock_timestamp() + TTL on the server. A taking
// or renewing Acquire is one INSERT .. ON CONFLICT DO UPDATE .. WHERE the
// row is ours or expired, which PostgreSQL runs under the row's lock.
//
// TLS: [backend_tls] maps onto libpq's sslmode, sslrootcert, sslcert and
// sslkey, after (so over) what the address says; mode disable leaves it to
// the address. Every call is bounded by its deadline on our side (poll on
// the socket) and by statement_timeout on the server's.
#include <libpq-fe.h>
#include <poll.h>

#include <memory>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "server/election/sql_lease_store.h"

namespace metasrv::server {
namespace {

// libpq's sslmode for a [backend_tls] mode; empty: leave it to the address.
std::string SslMode(const std::string& mode) {
  if (mode == "verify_ca") return "verify-ca";
  if (mode == "verify_full") return "verify-full";
  if (mode == "prefer" || mode == "require") return mode;
  return "";
}

// Whether a connection failure is one retrying will not cure.
bool IsPermanentConnectError(const std::string& message) {
  for (const char* permanent :
       {"password", "authentication", "certificate", "SSL", "ssl",
        "pg_hba.conf", "does not exist", "invalid", "missing", "unrecognized",
        "permission denied"}) {
    if (absl::StrContains(message, permanent)) return true;
  }
  return false;
}

struct ResultDeleter {
  void operator()(pg_result* r) const { PQclear(r); }
};
using PgResult = std::unique_ptr<pg_result, ResultDeleter>;

class PostgresSession final : public SqlSession {
 public:
  ~PostgresSession() override { Close(); }

  bool open() const override {
    return conn_ != nullptr && PQstatus(conn_) == CONNECTION_OK;
  }
  void Close() override {
    if (conn_ != nullptr) PQfinish(conn_);
    conn_ = nullptr;
  }
  absl::Status Connect(const LeaseStoreOptions& options,
                       absl::Time deadline) override;
  absl::StatusOr<Result> Run(const std::string& sql,
                             const std::vector<std::string>& params,
                             absl::Time deadline) override;
  absl::StatusOr<std::string> QuoteIdentifier(
      const std::string& name) override {
    char* quoted = PQescapeIdentifier(conn_, name.data(), name.size());
    if (quoted == nullptr) return Fail("table name", nullptr);
    std::string out = quoted;
    PQfreemem(quoted);
    return out;
  }

 private:
  // An error for the session's last failure (kFailedPrecondition when it
  // is about credentials, TLS or the database itself); closes the session.
  absl::Status Fail(const std::string& what, pg_result* result);

  pg_conn* conn_ = nullptr;  // Null when closed.
};

}  // namespace

absl::Status PostgresSession::Fail(const std::string& what, pg_result* result) {
  std::string message =
      result != nullptr ? PQresultErrorMessage(result) : PQerrorMessage(conn_);
  message = std::string(absl::StripTrailingAsciiWhitespace(message));
  const char* state = result != nullptr
                          ? PQresultErrorField(result, PG_DIAG_SQLSTATE)
                          : nullptr;
  // Class 28: authorization; 42501: insufficient privilege; 3D: no such
  // database.
  bool permanent = false;
  if (state != nullptr) {
    const std::string s = state;
    permanent =
        absl::StartsWith(s, "28") || s == "42501" || absl::StartsWith(s, "3D");
  } else if (what == "connect") {
    permanent = IsPermanentConnectError(message);
  }
  Close();
  const std::string text = absl::StrCat("PostgreSQL ", what, ": ", message);
  return permanent ? absl::FailedPreconditionError(text)
                   : absl::UnavailableError(text);
}

absl::Status PostgresSession::Connect(const LeaseStoreOptions& options,
                                      absl::Time deadline) {
  std::vector<std::pair<std::string, std::string>> params = {
      {"dbname", options.address},
      {"application_name", "metasrv"},
      // Let the server drop a session whose client vanished.
      {"keepalives", "1"},
      {"keepalives_idle", "5"},
      {"keepalives_interval", "2"},
      {"keepalives_count", "3"}};
  const std::string sslmode = SslMode(options.tls_mode);
  if (!sslmode.empty()) params.emplace_back("sslmode", sslmode);
  if (!options.ca_path.empty()) {
    params.emplace_back("sslrootcert", options.ca_path);
  }
  if (!options.cert_path.empty()) {
    params.emplace_back("sslcert", options.cert_path);
  }
  if (!options.key_path.empty())
    params.emplace_back("sslkey", options.key_path);
  // After dbname, so over what the connection string says.
  if (!options.password.empty()) {
    params.emplace_back("password", options.password);
  }
  std::vector<const char*> keys, values;
  for (const auto& [k, v] : params) {
    keys.push_back(k.c_str());
    values.push_back(v.c_str());
  }
  keys.push_back(nullptr);
  values.push_back(nullptr);
  conn_ = PQconnectStartParams(keys.data(), values.data(), /*expand_dbname=*/1);
  if (conn_ == nullptr) return absl::UnavailableError("PostgreSQL: no memory");
  // Notices ("relation already exists, skipping") are not errors; libpq
  // would print them on stderr.
  PQsetNoticeProcessor(
      conn_, [](void*, const char*) {}, nullptr);
  if (PQstatus(conn_) == CONNECTION_BAD) return Fail("connect", nullptr);
  PostgresPollingStatusType polling = PGRES_POLLING_WRITING;
  while (polling != PGRES_POLLING_OK) {
    if (polling == PGRES_POLLING_FAILED) return Fail("connect", nullptr);
    const int ready =
        WaitForSocket(PQsocket(conn_), polling == PGRES_POLLING_READING,
                      polling == PGRES_POLLING_WRITING, deadline);
    if (ready <= 0) {
      Close();
      return absl::UnavailableError(
          "PostgreSQL connect: timed out (server down or paused?)");
    }
    polling = PQconnectPoll(conn_);
  }
  return absl::OkStatus();
}

absl::StatusOr<SqlSession::Result> PostgresSession::Run(
    const std::string& sql, const std::vector<std::string>& params,
    absl::Time deadline) {
  std::vector<const char*> values;
  for (const std::string& p : params) values.push_back(p.c_str());
  if (PQsendQueryParams(conn_, sql.c_str(), static_cast<int>(values.size()),
                        nullptr, values.data(), nullptr, nullptr, 0) != 1) {
    return Fail("send", nullptr);
  }
  while (PQflush(conn_) == 1) {
    if (WaitForSocket(PQsocket(conn_), true, true, deadline) <= 0) {
      Close();
      return absl::UnavailableError("PostgreSQL: timed out sending");
    }
    if (PQconsumeInput(conn_) != 1) return Fail("send", nullptr);
  }
  PgResult last;
  while (true) {
    while (PQisBusy(conn_) == 1) {
      if (WaitForSocket(PQsocket(conn_), true, false, deadline) <= 0) {
        Close();
        return absl::UnavailableError(
            "PostgreSQL: timed out waiting for an answer (server paused or "
            "overloaded?)");
      }
      if (PQconsumeInput(conn_) != 1) return Fail("query", nullptr);
    }
    PgResult next(PQgetResult(conn_));
    if (next == nullptr) break;
    const ExecStatusType status = PQresultStatus(next.get());
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
      return Fail("query", next.get());
    }
    last = std::move(next);
  }
  if (last == nullptr) return Fail("query", nullptr);
  Result out;
  // Rows written or deleted ("" for a SELECT, whose rows are below).
  if (!absl::SimpleAtoi(PQcmdTuples(last.get()), &out.affected)) {
    out.affected = 0;
  }
  for (int i = 0; i < PQntuples(last.get()); ++i) {
    std::vector<std::string>& row = out.rows.emplace_back();
    for (int j = 0; j < PQnfields(last.get()); ++j) {
      row.emplace_back(PQgetvalue(last.get(), i, j),
                       PQgetlength(last.get(), i, j));
    }
  }
  return out;
}

namespace {

std::string PostgresSetup(absl::Duration timeout) {
  return absl::StrCat("SET statement_timeout = ",
                      absl::ToInt64Milliseconds(timeout) + 1);
}

constexpr char kInsert[] =
    "INSERT INTO $table AS t (k, holder, v, expires_at) VALUES ($1, $2, $3, "
    "clock_timestamp() + $4::bigint * interval '1 microsecond') "
    "ON CONFLICT (k) DO UPDATE SET holder = EXCLUDED.holder, "
    "v = EXCLUDED.v, expires_at = EXCLUDED.expires_at";

const SqlDialect kPostgres = {
    &PostgresSetup,
    "CREATE TABLE IF NOT EXISTS $table (k TEXT PRIMARY KEY, holder TEXT NOT "
    "NULL, v TEXT NOT NULL, expires_at TIMESTAMPTZ NOT NULL)",
    // Taken or renewed only if free, expired or ours: 0 rows otherwise.
    "INSERT INTO $table AS t (k, holder, v, expires_at) VALUES ($1, $2, $3, "
    "clock_timestamp() + $4::bigint * interval '1 microsecond') "
    "ON CONFLICT (k) DO UPDATE SET holder = EXCLUDED.holder, "
    "v = EXCLUDED.v, expires_at = EXCLUDED.expires_at "
    "WHERE t.holder = EXCLUDED.holder OR t.expires_at <= clock_timestamp()",
    kInsert, "DELETE FROM $table WHERE k = $1 AND holder = $2",
    "SELECT k, v, (EXTRACT(EPOCH FROM expires_at - clock_timestamp()) * "
    "1000000)::bigint FROM $table WHERE k LIKE $1 ESCAPE '!' AND "
    "expires_at > clock_timestamp() ORDER BY k"};

}  // namespace

std::unique_ptr<LeaseStore> MakePostgresLeaseStore(LeaseStoreOptions options) {
  return std::make_unique<SqlLeaseStore>(
      std::move(options), std::make_unique<PostgresSession>(), &kPostgres);
}

}  // namespace metasrv::server
