// A small synchronous client of etcd v3's Lease, KV and Election services.
#ifndef METASRV_SERVER_ELECTION_ETCD_CLIENT_H_
#define METASRV_SERVER_ELECTION_ETCD_CLIENT_H_

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "etcd/election.grpc.pb.h"
#include "etcd/rpc.grpc.pb.h"

namespace metasrv::server {

// How to reach a secured etcd: TLS and, separately, user authentication.
struct EtcdSecurity {
  bool tls = false;      // Connect over TLS, verifying the server.
  std::string ca_pem;    // CA bundle to verify it with; empty: the system's.
  std::string cert_pem;  // Client certificate chain (mTLS); may be empty.
  std::string key_pem;   // Its private key.
  std::string username;  // etcd user; empty: no authentication.
  std::string password;  // Its password.
};

// Talks to one of several etcd endpoints, moving to the next one when a call
// fails with UNAVAILABLE or DEADLINE_EXCEEDED. Every call has a deadline.
// Errors: kUnavailable / kDeadlineExceeded (retry), kNotFound (the lease or
// leader is gone), kCancelled (cancelled through its context).
//
// Thread safety: all methods are safe from any thread.
class EtcdClient {
 public:
  // `endpoints` are host:port; at least one. With `security.username`,
  // every call carries a token, got (and got again when etcd says it
  // expired) with the password. Each connection is watched with HTTP/2
  // pings, calls or not: every kKeepaliveTime (etcd's
  // --grpc-keepalive-min-time, 5 s by default, refuses faster ones), and a
  // ping unanswered for `keepalive_timeout` closes it, so that a cut link
  // is a new connection at once after the heal, not a retransmission
  // minutes away.
  explicit EtcdClient(std::vector<std::string> endpoints,
                      EtcdSecurity security = {},
                      absl::Duration keepalive_timeout = absl::Seconds(2));
  static constexpr absl::Duration kKeepaliveTime = absl::Seconds(5);

  // Whether etcd can be used as configured: authenticates if a user is set,
  // reads a key and asks the Election service for a leader.
  // kFailedPrecondition when it never will be (a TLS handshake that fails,
  // a wrong user or password), kInvalidArgument when the endpoint is not
  // an etcd client endpoint (etcd's peer port answers KV and Lease calls,
  // UNIMPLEMENTED to the Election's), kUnavailable when it may be later
  // (etcd down), OK otherwise.
  absl::Status CheckAccess(absl::Duration timeout);

  // Grants a lease of `ttl`; returns its id.
  absl::StatusOr<int64_t> LeaseGrant(absl::Duration ttl,
                                     absl::Duration timeout);
  absl::Status LeaseRevoke(int64_t lease, absl::Duration timeout);
  // Sends one keep-alive; returns the TTL left (kNotFound if the lease is
  // gone).
  absl::StatusOr<absl::Duration> LeaseKeepAlive(int64_t lease,
                                                absl::Duration timeout);
  // How long `lease` has left (rounded down to a second, as etcd counts)
  // and was granted for. kNotFound if it is gone.
  struct LeaseTtl {
    absl::Duration left;
    absl::Duration granted;
  };
  absl::StatusOr<LeaseTtl> LeaseTimeToLive(int64_t lease,
                                           absl::Duration timeout);

  // Blocks until this lease's candidate leads election `name`. Cancel it with
  // `context->TryCancel()` from another thread.
  absl::StatusOr<v3electionpb::LeaderKey> Campaign(
      const std::string& name, int64_t lease, const std::string& value,
      grpc::ClientContext* context);
  absl::Status Resign(const v3electionpb::LeaderKey& leader,
                      absl::Duration timeout);
  // Puts `key` = `value`, attached to `lease` (0: none).
  absl::Status Put(const std::string& key, const std::string& value,
                   int64_t lease, absl::Duration timeout);
  // Every key under `prefix`, in key order.
  absl::StatusOr<std::vector<mvccpb::KeyValue>> RangePrefix(
      const std::string& prefix, absl::Duration timeout);
  // Turns a gRPC status (also of a stream the caller holds, such as
  // Observe()) into ours and moves on to the next endpoint when the
  // current one looks down. A refused token (by code or by etcd's message)
  // is dropped, and the error is kUnavailable: the next call logs in again.
  absl::Status Check(const grpc::Status& status);
  // The password of the next login (the token in use stays until etcd
  // refuses it). For a password file re-read on SIGHUP.
  void SetPassword(std::string password);
  // Opens an Observe stream of election `name` on `context`.
  std::unique_ptr<grpc::ClientReader<v3electionpb::LeaderResponse>> Observe(
      const std::string& name, grpc::ClientContext* context);

 private:
  struct Endpoint {
    std::string address;                                     // host:port.
    std::shared_ptr<grpc::Channel> channel;                  // Connection.
    std::unique_ptr<etcdserverpb::Lease::Stub> lease;        // Lease API.
    std::unique_ptr<etcdserverpb::KV::Stub> kv;              // KV API.
    std::unique_ptr<v3electionpb::Election::Stub> election;  // Election API.
    std::unique_ptr<etcdserverpb::Auth::Stub> auth;          // Auth API.
  };

  // The endpoint to use now.
  Endpoint& Current();
  // Adds the auth token to `ctx` (authenticating first if there is none);
  // a no-op without a user. An error if no token can be had.
  absl::Status Authorize(grpc::ClientContext* ctx, absl::Duration timeout);
  // One unary call, `call(endpoint, ctx)`, with a deadline of `timeout` and
  // the token, through Check(). If etcd refused the token (it expired, or
  // etcd restarted), once more at once with a new login: an expiry costs
  // the caller nothing.
  template <typename Call>
  absl::Status Unary(absl::Duration timeout, Call call);

  std::vector<Endpoint>
      endpoints_;                // One per address; fixed after construction.
  const EtcdSecurity security_;  // TLS material and user (password below).
  absl::Mutex mu_;               // Guards the fields below.
  size_t current_ ABSL_GUARDED_BY(mu_) = 0;  // Index into endpoints_.
  // The password the next login sends (SetPassword() replaces it).
  std::string password_ ABSL_GUARDED_BY(mu_);
  // The auth token; empty until authenticated, and after etcd refused it.
  std::string token_ ABSL_GUARDED_BY(mu_);
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_ELECTION_ETCD_CLIENT_H_
