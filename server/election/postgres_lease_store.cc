#include "server/election/postgres_lease_store.h"

#include <libpq-fe.h>
#include <poll.h>

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"

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

std::string Micros(absl::Duration d) {
  return absl::StrCat(absl::ToInt64Microseconds(d));
}

}  // namespace

void PostgresLeaseStore::ResultDeleter::operator()(pg_result* r) const {
  PQclear(r);
}

PostgresLeaseStore::PostgresLeaseStore(LeaseStoreOptions options)
    : options_(std::move(options)) {}

PostgresLeaseStore::~PostgresLeaseStore() { Close(); }

void PostgresLeaseStore::Close() {
  if (conn_ != nullptr) PQfinish(conn_);
  conn_ = nullptr;
}

absl::Status PostgresLeaseStore::Fail(const std::string& what,
                                      pg_result* result) {
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

absl::Status PostgresLeaseStore::Connect(absl::Time deadline) {
  std::vector<std::pair<std::string, std::string>> params = {
      {"dbname", options_.address},
      {"application_name", "metasrv"},
      // Let the server drop a session whose client vanished.
      {"keepalives", "1"},
      {"keepalives_idle", "5"},
      {"keepalives_interval", "2"},
      {"keepalives_count", "3"}};
  const std::string sslmode = SslMode(options_.tls_mode);
  if (!sslmode.empty()) params.emplace_back("sslmode", sslmode);
  if (!options_.ca_path.empty()) {
    params.emplace_back("sslrootcert", options_.ca_path);
  }
  if (!options_.cert_path.empty()) {
    params.emplace_back("sslcert", options_.cert_path);
  }
  if (!options_.key_path.empty())
    params.emplace_back("sslkey", options_.key_path);
  // After dbname, so over what the connection string says.
  if (!options_.password.empty()) {
    params.emplace_back("password", options_.password);
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

absl::StatusOr<PostgresLeaseStore::Result> PostgresLeaseStore::Run(
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
  Result last;
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
    Result next(PQgetResult(conn_));
    if (next == nullptr) break;
    const ExecStatusType status = PQresultStatus(next.get());
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
      return Fail("query", next.get());
    }
    last = std::move(next);
  }
  if (last == nullptr) return Fail("query", nullptr);
  return last;
}

absl::Status PostgresLeaseStore::Open(absl::Duration timeout) {
  if (conn_ != nullptr && PQstatus(conn_) == CONNECTION_OK) {
    return absl::OkStatus();
  }
  Close();
  const absl::Time deadline = absl::Now() + timeout;
  absl::Status connected = Connect(deadline);
  if (!connected.ok()) return connected;
  char* quoted =
      PQescapeIdentifier(conn_, options_.table.data(), options_.table.size());
  if (quoted == nullptr) return Fail("table name", nullptr);
  table_ = quoted;
  PQfreemem(quoted);
  // The server gives up on a statement at the same time we do.
  absl::StatusOr<Result> set =
      Run(absl::StrCat("SET statement_timeout = ",
                       absl::ToInt64Milliseconds(timeout) + 1),
          {}, deadline);
  if (!set.ok()) return set.status();
  absl::StatusOr<Result> created =
      Run(absl::StrCat("CREATE TABLE IF NOT EXISTS ", table_,
                       " (k TEXT PRIMARY KEY, holder TEXT NOT NULL, v TEXT NOT "
                       "NULL, expires_at TIMESTAMPTZ NOT NULL)"),
          {}, deadline);
  return created.status();
}

absl::StatusOr<PostgresLeaseStore::Result> PostgresLeaseStore::OpenAndRun(
    const std::string& sql, const std::vector<std::string>& params,
    absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  absl::Status open = Open(timeout);
  if (!open.ok()) return open;
  return Run(absl::StrReplaceAll(sql, {{"$table", table_}}), params, deadline);
}

absl::StatusOr<bool> PostgresLeaseStore::Acquire(const std::string& key,
                                                 const std::string& holder,
                                                 const std::string& value,
                                                 absl::Duration ttl,
                                                 absl::Duration timeout) {
  absl::StatusOr<Result> r = OpenAndRun(
      "INSERT INTO $table AS t (k, holder, v, expires_at) VALUES ($1, $2, $3, "
      "clock_timestamp() + $4::bigint * interval '1 microsecond') "
      "ON CONFLICT (k) DO UPDATE SET holder = EXCLUDED.holder, "
      "v = EXCLUDED.v, expires_at = EXCLUDED.expires_at "
      "WHERE t.holder = EXCLUDED.holder OR t.expires_at <= clock_timestamp() "
      "RETURNING 1",
      {key, holder, value, Micros(ttl)}, timeout);
  if (!r.ok()) return r.status();
  return PQntuples(r->get()) == 1;
}

absl::Status PostgresLeaseStore::Put(const std::string& key,
                                     const std::string& holder,
                                     const std::string& value,
                                     absl::Duration ttl,
                                     absl::Duration timeout) {
  return OpenAndRun(
             "INSERT INTO $table (k, holder, v, expires_at) VALUES ($1, $2, "
             "$3, clock_timestamp() + $4::bigint * interval '1 microsecond') "
             "ON CONFLICT (k) DO UPDATE SET holder = EXCLUDED.holder, "
             "v = EXCLUDED.v, expires_at = EXCLUDED.expires_at",
             {key, holder, value, Micros(ttl)}, timeout)
      .status();
}

absl::Status PostgresLeaseStore::Release(const std::string& key,
                                         const std::string& holder,
                                         absl::Duration timeout) {
  return OpenAndRun("DELETE FROM $table WHERE k = $1 AND holder = $2",
                    {key, holder}, timeout)
      .status();
}

absl::StatusOr<std::vector<LeaseStore::Entry>> PostgresLeaseStore::Scan(
    const std::string& prefix, absl::Duration timeout) {
  absl::StatusOr<Result> r = OpenAndRun(
      "SELECT k, v, (EXTRACT(EPOCH FROM expires_at - clock_timestamp()) * "
      "1000000)::bigint FROM $table WHERE k LIKE $1 ESCAPE '!' AND "
      "expires_at > clock_timestamp() ORDER BY k",
      {LikePrefix(prefix)}, timeout);
  if (!r.ok()) return r.status();
  std::vector<Entry> out;
  for (int i = 0; i < PQntuples(r->get()); ++i) {
    int64_t micros = 0;
    if (!absl::SimpleAtoi(PQgetvalue(r->get(), i, 2), &micros)) micros = 0;
    out.push_back({PQgetvalue(r->get(), i, 0), PQgetvalue(r->get(), i, 1),
                   absl::Microseconds(micros)});
  }
  return out;
}

}  // namespace metasrv::server
