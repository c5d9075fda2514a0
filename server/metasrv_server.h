// The metasrv process: the in-memory KV, the flow-state core and the gRPC
// services over them. main() and the in-process tests both use it.
#ifndef METASRV_SERVER_METASRV_SERVER_H_
#define METASRV_SERVER_METASRV_SERVER_H_

#include <grpcpp/resource_quota.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server.h>
#include <grpcpp/server_builder.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/clock.h"
#include "core/flow_state_manager.h"
#include "core/leadership.h"
#include "server/election/election.h"
#include "server/election/etcd_election.h"
#include "server/ops/http_server.h"
#include "server/ops/metrics.h"
#include "server/ops/node_expirer.h"
#include "server/ops/self_description.h"
#include "server/ops/tcp_listener.h"
#include "server/rpc/grpc_acceptor.h"
#include "server/rpc/read_executor.h"
#include "server/rpc/reflection.h"
#include "server/rpc/stream_registry.h"
#include "server/services/admin_service.h"
#include "server/services/cluster_service.h"
#include "server/services/flow_state_service.h"
#include "server/services/heartbeat_handler.h"
#include "server/services/heartbeat_service.h"
#include "server/watch/flow_state_watch.h"

namespace metasrv::server {

struct ServerOptions {
  // host:port to listen on; port 0 picks a free one.
  std::string bind_addr = "127.0.0.1:3002";
  // Address clients are told to use; empty means the bound address.
  std::string server_addr;
  // Where the election runs. Empty: standalone, always the leader.
  // etcd_store: etcd endpoints (host:port); postgres_store: one libpq
  // connection string or URI; mysql_store: one mysql:// URL.
  std::vector<std::string> store_addrs;
  std::string backend = "etcd_store";                // With store_addrs.
  std::string election_name = "__metasrv_election";  // With store_addrs.
  absl::Duration lease_ttl = absl::Seconds(5);       // With store_addrs.
  // etcd over TLS (GreptimeDB's [backend_tls]): mode disable or prefer
  // (plaintext), require, verify_ca or verify_full (TLS; the server's
  // certificate and name are always verified), and PEM files.
  std::string store_tls_mode = "disable";
  std::string store_tls_ca, store_tls_cert, store_tls_key;
  // etcd user and a file holding its password; empty user: no auth.
  std::string store_username, store_password_file;
  uint64_t heartbeat_interval_ms = 3000;  // Told to clients at handshake.
  uint64_t retry_interval_ms = 3000;      // Told to clients at handshake.
  absl::Duration shutdown_grace = absl::Seconds(1);  // For in-flight calls.
  // Threads for large reads (GetFlowState, Cluster reads); 0 runs them on
  // gRPC's threads.
  int read_threads = 2;
  // host:port of the Prometheus /metrics endpoint; empty: none.
  std::string metrics_addr;
  // PEM files. With cert and key, gRPC is served over TLS only; with a
  // client CA too, clients must present a certificate it signed (mTLS).
  std::string tls_cert, tls_key, tls_client_ca;
  // File holding the admin bearer token; empty: admin calls from loopback only.
  std::string admin_token_file;
  uint64_t max_streams = 50000;     // Open heartbeat streams; 0: no limit.
  int max_message_bytes = 4 << 20;  // Largest request accepted.
  uint64_t max_flows_per_report = 100000;  // Larger reports are refused.
  // Flownodes known at once, and (node, flow) entries over all reports: a
  // new node or a report that would pass them is refused. 0: no limit.
  uint64_t max_nodes = 10000;
  uint64_t max_total_flows = 1000000;
  // HTTP/2 streams (calls of any kind) one connection may have open.
  int max_streams_per_connection = 1000;
  // Bytes of answers sent but not yet read by their clients; past it, new
  // answers get RESOURCE_EXHAUSTED. 0: no limit.
  uint64_t max_reply_bytes_in_flight = 128 << 20;
  // Bytes gRPC itself may use (its ResourceQuota); 0: no limit.
  size_t grpc_memory_limit = 512 << 20;
  // Large reads (all flows, KV ranges) waiting for a read thread; more get
  // RESOURCE_EXHAUSTED.
  size_t max_queued_reads = 64;
  // HTTP/2 keepalive pings: sent after this idle time; a peer that does not
  // answer within the timeout is dropped and its streams released.
  absl::Duration keepalive_time = absl::Seconds(30);
  absl::Duration keepalive_timeout = absl::Seconds(10);
  // A flownode silent for longer loses its report and record; zero: never.
  absl::Duration node_report_ttl = absl::ZeroDuration();
  // A node silent for longer loses its cluster info, a flownode its record
  // (its flow state stays); zero: never. GreptimeDB's node_max_idle_time.
  absl::Duration node_max_idle_time = absl::Hours(24);
  // Alerting metrics: per-flow series for this many flows (0: none), and
  // the thresholds of a stalled flow and a silent flownode.
  FlowAlertOptions flow_alerts;
  // WatchFlowState pushes at most once per this.
  absl::Duration watch_min_interval = absl::Milliseconds(500);
  // Time of heartbeats and node expiry; borrowed. Tests pass a ManualClock.
  const core::Clock* clock = core::SystemClock();
};

// Thread safety: Shutdown() and Wait() may be called from any thread.
class MetasrvServer final : public core::LeadershipListener {
 public:
  // Builds everything and starts serving. kUnavailable if it cannot listen.
  static absl::StatusOr<std::unique_ptr<MetasrvServer>> Start(
      ServerOptions options);
  ~MetasrvServer() override;

  // Stops accepting calls, ends the open heartbeat streams with UNAVAILABLE,
  // and waits up to the grace period for calls in flight. Idempotent.
  void Shutdown();
  // Blocks until the server has shut down.
  void Wait();

  int port() const { return port_; }
  // Port of /metrics, /health and /ready; 0 when not served.
  int metrics_port() const { return http_ == nullptr ? 0 : http_->port(); }
  const std::string& advertised_addr() const { return advertised_addr_; }

  // For tests (and an embedder): the parts, to inspect or drive directly.
  // main() uses none of them.
  core::FlowStateManager& flow_state_for_test() { return flow_state_; }
  StreamRegistry& streams_for_test() { return streams_; }
  WatchHub& watch_for_test() { return *watch_; }
  const core::Leadership& leadership_for_test() const { return *leadership_; }

  // core::LeadershipListener: every leadership change resets the flow state
  // (and so the in-memory KV).
  uint64_t OnBecomeLeader() override;
  uint64_t OnStepDown() override;

 private:
  explicit MetasrvServer(ServerOptions options);
  // The steps of Start(), in order. Standalone or an election (not
  // started yet).
  absl::Status StartLeadership();
  // The election --backend names, not started.
  absl::StatusOr<std::unique_ptr<Election>> MakeElection();
  // What this replica registers about itself in the election's store.
  std::function<core::MetasrvNodeInfo()> Describe();
  // The TLS material and credentials for etcd the options name, read.
  static absl::StatusOr<EtcdSecurity> StoreSecurity(
      const ServerOptions& options);
  // Metrics, the watch hub, node expiry, the HTTP endpoints.
  absl::Status StartSupport();
  // The heartbeat logic and the gRPC services.
  absl::Status MakeServices();
  // Builds and starts the gRPC server with the services.
  absl::Status Serve();
  // gRPC's limits, keepalive and memory quota, from the options.
  void SetLimits(grpc::ServerBuilder* builder);
  // Says where it serves.
  void LogServing() const;
  // Plaintext, TLS or mTLS, as the options say.
  static absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>>
  ServerCredentials(const ServerOptions& options);
  // /metrics, /health and /ready.
  HttpServer::Routes HttpRoutes();
  // What LeaderChange does.
  absl::StatusOr<uint64_t> LeaderChange();

  const ServerOptions options_;  // As started.
  // Descriptors each port's connections may take (soft limit raised first).
  const DescriptorCeilings descriptor_ceilings_ =
      DescriptorCeilings::For(RaiseDescriptorLimit());
  // The gRPC port's connections: bound by Start(), serving from Serve().
  std::unique_ptr<GrpcAcceptor> acceptor_;
  int port_ = 0;                 // The port bound.
  std::string advertised_addr_;  // What AskLeader answers.
  // What this replica says about itself (MetasrvPeers, candidate info).
  std::unique_ptr<SelfDescription> self_description_;
  // Flow state and the in-memory KV that shows it.
  core::FlowStateManager flow_state_{
      {options_.clock, options_.node_report_ttl, options_.max_nodes,
       options_.max_total_flows, options_.node_max_idle_time}};
  std::unique_ptr<core::Leadership> leadership_;  // Who leads.
  Election* election_ = nullptr;  // leadership_ when elected, else null.
  StreamRegistry streams_{options_.max_streams};  // Open heartbeat streams.
  std::unique_ptr<Metrics> metrics_;              // Prometheus metrics.
  std::unique_ptr<HttpServer> http_;  // /metrics, /health, /ready; or null.
  // Reads, off gRPC's threads.
  // Declared before the services and the server, so it outlives their calls.
  ReadExecutor reads_{{options_.read_threads, 4096, options_.max_queued_reads}};
  ReplyBudget replies_{options_.max_reply_bytes_in_flight};  // Unread answers.
  std::unique_ptr<WatchHub> watch_;            // WatchFlowState pushes.
  std::unique_ptr<NodeExpirer> expirer_;       // With a node TTL, else null.
  std::unique_ptr<HeartbeatHandler> handler_;  // Per-request logic.
  std::unique_ptr<HeartbeatService> heartbeat_service_;   // Heartbeat.
  std::unique_ptr<ClusterService> cluster_service_;       // Cluster.
  std::unique_ptr<FlowStateService> flow_state_service_;  // FlowState.
  std::unique_ptr<AdminService> admin_service_;           // Admin.
  std::unique_ptr<ReflectionV1Service> reflection_v1_;    // Reflection v1.
  std::unique_ptr<ReflectionV1alphaService> reflection_v1alpha_;  // v1alpha.
  grpc::ResourceQuota quota_{"metasrv"};  // gRPC's memory; lives with it.
  std::unique_ptr<grpc::Server> server_;  // The gRPC server.
  absl::Mutex shutdown_mu_;               // Guards below.
  bool shut_down_ ABSL_GUARDED_BY(shutdown_mu_) = false;  // Shutdown() ran.
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_METASRV_SERVER_H_
