// A store a metasrv election runs on (etcd, PostgreSQL, MariaDB), started
// by a test from Debian's packages on free loopback ports.
#ifndef METASRV_TESTS_SERVER_STORE_PROCESS_H_
#define METASRV_TESTS_SERVER_STORE_PROCESS_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"

namespace metasrv::testing {

// Starts in its constructor and waits until it answers; the destructor
// always stops it and removes its data.
class StoreProcess {
 public:
  virtual ~StoreProcess() = default;

  // The metasrv --backend for it.
  virtual std::string backend() const = 0;
  // The metasrv --store_addrs for it (an etcd endpoint, a PostgreSQL URI,
  // a mysql:// URL).
  virtual std::string address() const = 0;
  // SIGSTOP / SIGCONT to every process of the server; Pause() returns once
  // every thread of it is stopped.
  virtual void Pause() = 0;
  virtual void Resume() = 0;
  // Stops it, keeping its data; Start() brings it back on the same port.
  virtual void Stop() = 0;
  virtual void Start() = 0;
};

// "etcd_store", "postgres_store" or "mysql_store".
std::unique_ptr<StoreProcess> StartStore(const std::string& backend);

// Runs `argv` to its end (up to `timeout`); whether it exited 0.
// Waits (up to 5 s) until every thread of `pids` is stopped (or gone).
void WaitUntilStopped(const std::vector<pid_t>& pids);

bool RunCommand(const std::vector<std::string>& argv,
                absl::Duration timeout = absl::Seconds(60));

}  // namespace metasrv::testing

#endif  // METASRV_TESTS_SERVER_STORE_PROCESS_H_
