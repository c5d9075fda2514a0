// The MySQL (and MariaDB) session and dialect of SqlLeaseStore, through
// MariaDB Connector/C's non-blocking interface.
//
// The table: (k VARBINARY PRIMARY KEY, holder, v, expires_at DATETIME(6)),
// times in UTC on the server. A taking or renewing Acquire is one INSERT ..
// ON DUPLICATE KEY UPDATE whose first assignment decides the holder (ours
// if it was ours or expired) and whose others follow it; InnoDB runs it
// under the row's lock. The session's sql_mode is set so that assignments
// run left to right (MariaDB's SIMULTANEOUS_ASSIGNMENT off). Rows
// affected: 1 inserted, 2 updated (ours), 0 left as it was (not ours): the
// session does not ask for found rows.
//
// TLS: mode require, verify_ca or verify_full enforce TLS; verify_ca and
// verify_full also verify the server's certificate (and name) against the
// CA. Every call is bounded by its deadline (poll on the socket).
#include <mysql.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "server/election/sql_lease_store.h"
#include "server/ops/store_address.h"

namespace metasrv::server {
namespace {

// Drives one non-blocking call: `start()` once, then `resume(ready)` while
// it waits on the socket. False if `deadline` passed first.
template <typename Start, typename Resume>
bool Drive(MYSQL* conn, absl::Time deadline, Start start, Resume resume) {
  int status = start();
  while (status != 0) {
    const int ready =
        WaitForSocket(mysql_get_socket(conn), (status & MYSQL_WAIT_READ) != 0,
                      (status & MYSQL_WAIT_WRITE) != 0, deadline);
    if (ready <= 0) return false;
    int got = 0;
    if ((ready & (POLLIN | POLLHUP | POLLERR)) != 0) got |= MYSQL_WAIT_READ;
    if ((ready & (POLLOUT | POLLHUP | POLLERR)) != 0) got |= MYSQL_WAIT_WRITE;
    status = resume(got);
  }
  return true;
}

// Errors that retrying will not cure: access, unknown database, TLS.
bool IsPermanent(unsigned error) {
  switch (error) {
    case 1044:  // ER_DBACCESS_DENIED_ERROR
    case 1045:  // ER_ACCESS_DENIED_ERROR
    case 1049:  // ER_BAD_DB_ERROR
    case 1142:  // ER_TABLEACCESS_DENIED_ERROR
    case 1227:  // ER_SPECIFIC_ACCESS_DENIED_ERROR
    case 1251:  // ER_NOT_SUPPORTED_AUTH_MODE
    case 1698:  // ER_ACCESS_DENIED_NO_PASSWORD_ERROR
    case 2026:  // CR_SSL_CONNECTION_ERROR
      return true;
    default:
      return false;
  }
}

class MysqlSession final : public SqlSession {
 public:
  ~MysqlSession() override { Close(); }

  bool open() const override { return conn_ != nullptr; }
  void Close() override {
    // mysql_close() sends COM_QUIT; a write to a paused server only fills
    // the socket's buffer, so it does not block.
    if (conn_ != nullptr) mysql_close(conn_);
    conn_ = nullptr;
  }
  absl::Status Connect(const LeaseStoreOptions& options,
                       absl::Time deadline) override;
  absl::StatusOr<Result> Run(const std::string& sql,
                             const std::vector<std::string>& params,
                             absl::Time deadline) override;
  absl::StatusOr<std::string> QuoteIdentifier(
      const std::string& name) override {
    if (name.find('`') != std::string::npos) {
      Close();
      return absl::FailedPreconditionError("MySQL: bad table name");
    }
    return absl::StrCat("`", name, "`");
  }

 private:
  // `s` as a quoted SQL string literal.
  std::string Quote(const std::string& s) {
    std::string out(s.size() * 2 + 1, '\0');
    out.resize(mysql_real_escape_string(conn_, out.data(), s.data(), s.size()));
    return absl::StrCat("'", out, "'");
  }
  // An error for the session's last failure; closes the session.
  absl::Status Fail(const std::string& what);

  MYSQL* conn_ = nullptr;  // Null when closed.
};

}  // namespace

absl::Status MysqlSession::Fail(const std::string& what) {
  const unsigned error = conn_ != nullptr ? mysql_errno(conn_) : 0;
  const std::string text =
      absl::StrCat("MySQL ", what, ": ",
                   conn_ != nullptr ? mysql_error(conn_) : "no session",
                   error != 0 ? absl::StrCat(" (error ", error, ")") : "");
  Close();
  return IsPermanent(error) ? absl::FailedPreconditionError(text)
                            : absl::UnavailableError(text);
}

absl::Status MysqlSession::Connect(const LeaseStoreOptions& options,
                                   absl::Time deadline) {
  absl::StatusOr<MysqlAddress> a = ParseMysqlAddress(options.address);
  if (!a.ok()) return absl::FailedPreconditionError(a.status().message());
  if (!options.password.empty()) a->password = options.password;
  conn_ = mysql_init(nullptr);
  if (conn_ == nullptr) return absl::UnavailableError("MySQL: no memory");
  mysql_options(conn_, MYSQL_OPT_NONBLOCK, nullptr);
  const std::string& mode = options.tls_mode;
  if (mode == "require" || mode == "verify_ca" || mode == "verify_full") {
    const my_bool on = 1;
    mysql_options(conn_, MYSQL_OPT_SSL_ENFORCE, &on);
    if (mode != "require") {
      mysql_options(conn_, MYSQL_OPT_SSL_VERIFY_SERVER_CERT, &on);
    }
  }
  if (!options.ca_path.empty()) {
    mysql_options(conn_, MYSQL_OPT_SSL_CA, options.ca_path.c_str());
  }
  if (!options.cert_path.empty()) {
    mysql_options(conn_, MYSQL_OPT_SSL_CERT, options.cert_path.c_str());
  }
  if (!options.key_path.empty()) {
    mysql_options(conn_, MYSQL_OPT_SSL_KEY, options.key_path.c_str());
  }
  MYSQL* connected = nullptr;
  const bool done = Drive(
      conn_, deadline,
      [&] {
        return mysql_real_connect_start(
            &connected, conn_, a->host.c_str(), a->user.c_str(),
            a->password.c_str(), a->database.c_str(), a->port, nullptr, 0);
      },
      [&](int ready) {
        return mysql_real_connect_cont(&connected, conn_, ready);
      });
  if (!done) {
    Close();
    return absl::UnavailableError(
        "MySQL connect: timed out (server down or paused?)");
  }
  if (connected == nullptr) return Fail("connect");
  // TCP keepalives, as libpq's for PostgreSQL: the server drops a session
  // whose client vanished, and a connection across a cut link dies.
  const int fd = static_cast<int>(mysql_get_socket(conn_));
  const int on = 1, idle = 5, interval = 2, count = 3;
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof(interval));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof(count));
  return absl::OkStatus();
}

absl::StatusOr<SqlSession::Result> MysqlSession::Run(
    const std::string& text, const std::vector<std::string>& params,
    absl::Time deadline) {
  // Parameters are quoted into the text, in one pass ($1 inside a value
  // stays as it is).
  std::vector<std::pair<std::string, std::string>> bound;
  for (size_t i = 0; i < params.size(); ++i) {
    bound.emplace_back(absl::StrCat("$", i + 1), Quote(params[i]));
  }
  const std::string sql = absl::StrReplaceAll(text, bound);
  int error = 0;
  if (!Drive(
          conn_, deadline,
          [&] {
            return mysql_real_query_start(&error, conn_, sql.data(),
                                          sql.size());
          },
          [&](int ready) {
            return mysql_real_query_cont(&error, conn_, ready);
          })) {
    Close();
    return absl::UnavailableError(
        "MySQL: timed out waiting for an answer (server paused or "
        "overloaded?)");
  }
  if (error != 0) return Fail("query");
  Result out;
  out.affected = mysql_affected_rows(conn_);
  if (mysql_field_count(conn_) == 0) return out;
  MYSQL_RES* result = nullptr;
  if (!Drive(
          conn_, deadline,
          [&] { return mysql_store_result_start(&result, conn_); },
          [&](int ready) {
            return mysql_store_result_cont(&result, conn_, ready);
          })) {
    Close();
    return absl::UnavailableError("MySQL: timed out reading an answer");
  }
  if (result == nullptr) return Fail("result");
  const unsigned fields = mysql_num_fields(result);
  while (MYSQL_ROW row = mysql_fetch_row(result)) {
    const unsigned long* lengths = mysql_fetch_lengths(result);
    std::vector<std::string>& cells = out.rows.emplace_back();
    for (unsigned i = 0; i < fields; ++i) {
      cells.emplace_back(row[i] == nullptr ? "" : row[i], lengths[i]);
    }
  }
  mysql_free_result(result);
  return out;
}

namespace {

// Assignments left to right (see the top); the server gives up on a
// statement when we do.
std::string MysqlSetup(absl::Duration timeout) {
  return absl::StrCat(
      "SET SESSION sql_mode = 'STRICT_TRANS_TABLES', time_zone = '+00:00', "
      "innodb_lock_wait_timeout = ",
      std::max<int64_t>(1, absl::ToInt64Seconds(timeout)));
}

const SqlDialect kMysql = {
    &MysqlSetup,
    "CREATE TABLE IF NOT EXISTS $table (k VARBINARY(512) PRIMARY KEY, holder "
    "VARBINARY(512) NOT NULL, v VARBINARY(1024) NOT NULL, expires_at "
    "DATETIME(6) NOT NULL) ENGINE=InnoDB",
    "INSERT INTO $table (k, holder, v, expires_at) VALUES ($1, $2, $3, "
    "UTC_TIMESTAMP(6) + INTERVAL $4 MICROSECOND) ON DUPLICATE KEY UPDATE "
    "holder = IF(holder = VALUES(holder) OR expires_at <= UTC_TIMESTAMP(6), "
    "VALUES(holder), holder), v = IF(holder = VALUES(holder), VALUES(v), v), "
    "expires_at = IF(holder = VALUES(holder), VALUES(expires_at), "
    "expires_at)",
    "REPLACE INTO $table (k, holder, v, expires_at) VALUES ($1, $2, $3, "
    "UTC_TIMESTAMP(6) + INTERVAL $4 MICROSECOND)",
    "DELETE FROM $table WHERE k = $1 AND holder = $2",
    "SELECT k, v, TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), expires_at) "
    "FROM $table WHERE k LIKE $1 ESCAPE '!' AND expires_at > "
    "UTC_TIMESTAMP(6) ORDER BY k"};

}  // namespace

std::unique_ptr<LeaseStore> MakeMysqlLeaseStore(LeaseStoreOptions options) {
  return std::make_unique<SqlLeaseStore>(
      std::move(options), std::make_unique<MysqlSession>(), &kMysql);
}

}  // namespace metasrv::server
