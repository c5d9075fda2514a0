// A real etcd (Debian's etcd-server) on free loopback ports, for HA tests.
#ifndef METASRV_TESTS_SERVER_ETCD_PROCESS_H_
#define METASRV_TESTS_SERVER_ETCD_PROCESS_H_

#include <memory>
#include <string>

#include "tests/server/test_util.h"

namespace metasrv::testing {

// Starts etcd with its data in a fresh temporary folder and waits until it
// answers. The destructor always stops it and removes the folder.
class EtcdProcess {
 public:
  EtcdProcess();
  ~EtcdProcess();

  // host:port of the client endpoint.
  const std::string& endpoint() const { return endpoint_; }

  // SIGSTOP / SIGCONT.
  void Pause();
  void Resume();
  // Stops it (SIGTERM, then SIGKILL), keeping its data.
  void Stop();
  // Starts it again on the same ports and data, and waits until it answers.
  void Start();

 private:
  std::string data_dir_;   // Its data; removed at the end.
  std::string endpoint_;   // Client endpoint.
  std::string peer_url_;   // Peer URL.
  std::unique_ptr<ChildProcess> process_;  // While running.
};

}  // namespace metasrv::testing

#endif  // METASRV_TESTS_SERVER_ETCD_PROCESS_H_
