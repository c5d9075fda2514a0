// A real etcd (Debian's etcd-server) on free loopback ports, for HA tests.
#ifndef METASRV_TESTS_SERVER_ETCD_PROCESS_H_
#define METASRV_TESTS_SERVER_ETCD_PROCESS_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>
#include <vector>

#include "tests/server/store_process.h"
#include "tests/server/test_util.h"

namespace metasrv::testing {

// Starts etcd with its data in a fresh temporary folder and waits until it
// answers. The destructor always stops it and removes the folder.
class EtcdProcess final : public StoreProcess {
 public:
  // A secured etcd (PEM paths). TLS when `cert` is set: its certificate
  // and key, signed by `ca`; with `client_cert_auth`, clients must present a
  // certificate `ca` signed (`client_cert`, `client_key` are one, for
  // etcdctl). Authentication on, user "root" with `root_password`, when that
  // is set.
  struct Options {
    std::string ca, cert, key;            // TLS when cert is set.
    bool client_cert_auth = false;        // mTLS.
    std::string client_cert, client_key;  // For etcdctl, with mTLS.
    std::string root_password;            // Auth when set.
    std::vector<std::string> extra_args;  // More etcd flags.
    // With auth: JWT tokens that expire this long after login (etcd's
    // syntax, "2s"); keys made in its data folder. Empty: simple tokens.
    std::string jwt_ttl;
  };

  EtcdProcess() : EtcdProcess(Options{}) {}
  explicit EtcdProcess(Options options);
  ~EtcdProcess() override;

  // host:port of the client endpoint.
  const std::string& endpoint() const { return endpoint_; }
  // host:port of the peer endpoint (raft's; not for clients).
  std::string peer_endpoint() const {
    return peer_url_.substr(peer_url_.find("://") + 3);
  }
  std::string backend() const override { return "etcd_store"; }
  std::string address() const override { return endpoint_; }

  // Changes user root's password (with auth on); whether etcdctl did.
  bool ChangeRootPassword(const std::string& old_password,
                          const std::string& new_password);

  // SIGSTOP / SIGCONT.
  void Pause() override;
  void Resume() override;
  // Stops it (SIGTERM, then SIGKILL), keeping its data.
  void Stop() override;
  // Starts it again on the same ports and data, and waits until it answers.
  void Start() override;

 private:
  // Starts it on endpoint_/peer_url_ and waits until it answers; false
  // (and not running) when it exited first, e.g. a port was taken.
  bool Launch();
  // Runs etcdctl against it; whether it exited 0.
  bool Etcdctl(const std::vector<std::string>& args);
  // Credentials that reach it (TLS as configured; no auth token).
  std::shared_ptr<grpc::ChannelCredentials> Credentials() const;

  Options options_;                        // TLS and auth (+ JWT keys).
  std::string data_dir_;                   // Its data; removed at the end.
  std::string endpoint_;                   // Client endpoint.
  std::string peer_url_;                   // Peer URL.
  std::unique_ptr<ChildProcess> process_;  // While running.
};

}  // namespace metasrv::testing

#endif  // METASRV_TESTS_SERVER_ETCD_PROCESS_H_
