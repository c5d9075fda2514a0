#include "server/election/mysql_lease_store.h"

#include <mysql.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstdlib>
#include <utility>

#include "absl/functional/function_ref.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"

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

}  // namespace

MysqlLeaseStore::MysqlLeaseStore(LeaseStoreOptions options)
    : options_(std::move(options)) {}

MysqlLeaseStore::~MysqlLeaseStore() { Close(); }

void MysqlLeaseStore::Close() {
  // mysql_close() sends COM_QUIT; a write to a paused server only fills
  // the socket's buffer, so it does not block.
  if (conn_ != nullptr) mysql_close(conn_);
  conn_ = nullptr;
}

absl::Status MysqlLeaseStore::Fail(const std::string& what) {
  const unsigned error = conn_ != nullptr ? mysql_errno(conn_) : 0;
  const std::string text =
      absl::StrCat("MySQL ", what, ": ",
                   conn_ != nullptr ? mysql_error(conn_) : "no session",
                   error != 0 ? absl::StrCat(" (error ", error, ")") : "");
  Close();
  return IsPermanent(error) ? absl::FailedPreconditionError(text)
                            : absl::UnavailableError(text);
}

absl::Status MysqlLeaseStore::Connect(absl::Time deadline) {
  absl::StatusOr<MysqlAddress> a = ParseMysqlAddress(options_.address);
  if (!a.ok()) return absl::FailedPreconditionError(a.status().message());
  if (!options_.password.empty()) a->password = options_.password;
  conn_ = mysql_init(nullptr);
  if (conn_ == nullptr) return absl::UnavailableError("MySQL: no memory");
  mysql_options(conn_, MYSQL_OPT_NONBLOCK, nullptr);
  const std::string& mode = options_.tls_mode;
  if (mode == "require" || mode == "verify_ca" || mode == "verify_full") {
    const my_bool on = 1;
    mysql_options(conn_, MYSQL_OPT_SSL_ENFORCE, &on);
    if (mode != "require") {
      mysql_options(conn_, MYSQL_OPT_SSL_VERIFY_SERVER_CERT, &on);
    }
  }
  if (!options_.ca_path.empty()) {
    mysql_options(conn_, MYSQL_OPT_SSL_CA, options_.ca_path.c_str());
  }
  if (!options_.cert_path.empty()) {
    mysql_options(conn_, MYSQL_OPT_SSL_CERT, options_.cert_path.c_str());
  }
  if (!options_.key_path.empty()) {
    mysql_options(conn_, MYSQL_OPT_SSL_KEY, options_.key_path.c_str());
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

absl::StatusOr<uint64_t> MysqlLeaseStore::Run(const std::string& sql,
                                              absl::Time deadline,
                                              std::vector<Entry>* rows) {
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
  const uint64_t affected = mysql_affected_rows(conn_);
  if (mysql_field_count(conn_) == 0) return affected;
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
  while (MYSQL_ROW row = mysql_fetch_row(result)) {
    const unsigned long* lengths = mysql_fetch_lengths(result);
    if (rows != nullptr && mysql_num_fields(result) >= 3) {
      int64_t micros = 0;
      if (!absl::SimpleAtoi(absl::string_view(row[2], lengths[2]), &micros)) {
        micros = 0;
      }
      rows->push_back({std::string(row[0], lengths[0]),
                       std::string(row[1], lengths[1]),
                       absl::Microseconds(micros)});
    }
  }
  mysql_free_result(result);
  return affected;
}

std::string MysqlLeaseStore::Quote(const std::string& s) {
  std::string out(s.size() * 2 + 1, '\0');
  out.resize(mysql_real_escape_string(conn_, out.data(), s.data(), s.size()));
  return absl::StrCat("'", out, "'");
}

absl::Status MysqlLeaseStore::Open(absl::Duration timeout) {
  if (conn_ != nullptr) return absl::OkStatus();
  if (options_.table.find('`') != std::string::npos) {
    return absl::FailedPreconditionError("MySQL: bad table name");
  }
  const absl::Time deadline = absl::Now() + timeout;
  absl::Status connected = Connect(deadline);
  if (!connected.ok()) return connected;
  // Assignments left to right (see the class comment); the server gives up
  // on a statement when we do.
  absl::StatusOr<uint64_t> set =
      Run(absl::StrCat("SET SESSION sql_mode = 'STRICT_TRANS_TABLES', "
                       "time_zone = '+00:00', innodb_lock_wait_timeout = ",
                       std::max<int64_t>(1, absl::ToInt64Seconds(timeout))),
          deadline);
  if (!set.ok()) return set.status();
  absl::StatusOr<uint64_t> created =
      Run(absl::StrCat("CREATE TABLE IF NOT EXISTS `", options_.table,
                       "` (k VARBINARY(512) PRIMARY KEY, holder VARBINARY(512) "
                       "NOT NULL, v VARBINARY(1024) NOT NULL, expires_at "
                       "DATETIME(6) NOT NULL) ENGINE=InnoDB"),
          deadline);
  return created.status();
}

absl::StatusOr<uint64_t> MysqlLeaseStore::OpenAndRun(
    absl::FunctionRef<std::string()> sql, absl::Duration timeout,
    std::vector<Entry>* rows) {
  const absl::Time deadline = absl::Now() + timeout;
  absl::Status open = Open(timeout);
  if (!open.ok()) return open;
  return Run(absl::StrReplaceAll(
                 sql(), {{"$table", absl::StrCat("`", options_.table, "`")}}),
             deadline, rows);
}

absl::StatusOr<bool> MysqlLeaseStore::Acquire(const std::string& key,
                                              const std::string& holder,
                                              const std::string& value,
                                              absl::Duration ttl,
                                              absl::Duration timeout) {
  // Rows affected: 1 inserted, 2 updated (ours), 0 left as it was (not
  // ours): the session does not ask for found rows.
  absl::StatusOr<uint64_t> affected = OpenAndRun(
      [&] {
        return absl::StrCat(
            "INSERT INTO $table (k, holder, v, expires_at) VALUES (",
            Quote(key), ", ", Quote(holder), ", ", Quote(value),
            ", UTC_TIMESTAMP(6) + INTERVAL ", absl::ToInt64Microseconds(ttl),
            " MICROSECOND) ON DUPLICATE KEY UPDATE "
            "holder = IF(holder = VALUES(holder) OR expires_at <= "
            "UTC_TIMESTAMP(6), VALUES(holder), holder), "
            "v = IF(holder = VALUES(holder), VALUES(v), v), "
            "expires_at = IF(holder = VALUES(holder), VALUES(expires_at), "
            "expires_at)");
      },
      timeout);
  if (!affected.ok()) return affected.status();
  return *affected > 0;
}

absl::Status MysqlLeaseStore::Put(const std::string& key,
                                  const std::string& holder,
                                  const std::string& value, absl::Duration ttl,
                                  absl::Duration timeout) {
  return OpenAndRun(
             [&] {
               return absl::StrCat(
                   "REPLACE INTO $table (k, holder, v, expires_at) "
                   "VALUES (",
                   Quote(key), ", ", Quote(holder), ", ", Quote(value),
                   ", UTC_TIMESTAMP(6) + INTERVAL ",
                   absl::ToInt64Microseconds(ttl), " MICROSECOND)");
             },
             timeout)
      .status();
}

absl::Status MysqlLeaseStore::Release(const std::string& key,
                                      const std::string& holder,
                                      absl::Duration timeout) {
  return OpenAndRun(
             [&] {
               return absl::StrCat("DELETE FROM $table WHERE k = ", Quote(key),
                                   " AND holder = ", Quote(holder));
             },
             timeout)
      .status();
}

absl::StatusOr<std::vector<LeaseStore::Entry>> MysqlLeaseStore::Scan(
    const std::string& prefix, absl::Duration timeout) {
  std::vector<Entry> rows;
  absl::StatusOr<uint64_t> ran = OpenAndRun(
      [&] {
        return absl::StrCat(
            "SELECT k, v, TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), "
            "expires_at) FROM $table WHERE k LIKE ",
            Quote(LikePrefix(prefix)),
            " ESCAPE '!' AND expires_at > UTC_TIMESTAMP(6) ORDER BY k");
      },
      timeout, &rows);
  if (!ran.ok()) return ran.status();
  return rows;
}

}  // namespace metasrv::server
