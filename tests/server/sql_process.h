// PostgreSQL and MariaDB servers for HA tests, each in a fresh temporary
// folder on a free loopback port. As root, they run as the packages'
// postgres and mysql users (neither server runs as root).
#ifndef METASRV_TESTS_SERVER_SQL_PROCESS_H_
#define METASRV_TESTS_SERVER_SQL_PROCESS_H_

#include <memory>
#include <string>
#include <vector>

#include "tests/server/store_process.h"
#include "tests/server/test_util.h"

namespace metasrv::testing {

// User "metasrv" with password kSqlPassword; password authentication over
// TCP.
inline constexpr char kSqlPassword[] = "s3cret";

// A server certificate and key (PEM paths) to serve TLS with.
struct ServerTls {
  std::string cert, key;
};

// Shared by both: data folder, port, the running server.
class SqlProcess : public StoreProcess {
 public:
  ~SqlProcess() override;
  void Pause() override;
  void Resume() override;
  void Stop() override;
  // `address()` with another password, for the refusal tests.
  virtual std::string AddressWithPassword(
      const std::string& password) const = 0;
  std::string address() const override {
    return AddressWithPassword(kSqlPassword);
  }

 protected:
  // `user`: who runs the server when we are root. With `tls`, its files are
  // copied into the data folder, owned by `user`.
  SqlProcess(std::string user, const ServerTls* tls);
  // `argv`, run as `user_` when we are root.
  std::vector<std::string> AsUser(std::vector<std::string> argv) const;
  // Starts `argv` (as the user) and waits until the port takes connections.
  void Launch(const std::vector<std::string>& argv);

  const std::string user_;                 // Runs the server (as root).
  std::string dir_;                        // Data and socket; removed.
  int port_ = 0;                           // Its TCP port on 127.0.0.1.
  bool tls_ = false;  // Serves TLS with dir_/server.pem and dir_/server.key.
  int stop_signal_ = 0;                    // Its fast clean shutdown.
  std::unique_ptr<ChildProcess> process_;  // While running.
};

class PostgresProcess final : public SqlProcess {
 public:
  explicit PostgresProcess(const ServerTls* tls = nullptr);
  std::string backend() const override { return "postgres_store"; }
  std::string AddressWithPassword(const std::string& password) const override;
  void Start() override;
};

class MariadbProcess final : public SqlProcess {
 public:
  explicit MariadbProcess(const ServerTls* tls = nullptr);
  std::string backend() const override { return "mysql_store"; }
  std::string AddressWithPassword(const std::string& password) const override;
  void Start() override;
};

}  // namespace metasrv::testing

#endif  // METASRV_TESTS_SERVER_SQL_PROCESS_H_
