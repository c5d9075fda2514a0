// The metasrv process: the in-memory KV, the flow-state core and the gRPC
// services over them. main() and the in-process tests both use it.
#ifndef METASRV_SERVER_METASRV_SERVER_H_
#define METASRV_SERVER_METASRV_SERVER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/clock.h"
#include "core/flow_state_manager.h"
#include "core/leadership.h"
#include "server/config/checked_options.h"
#include "server/config/server_options.h"
#include "server/election/election.h"
#include "server/election/etcd_election.h"
#include "server/ops/http_server.h"
#include "server/ops/metrics.h"
#include "server/ops/node_expirer.h"
#include "server/ops/self_description.h"
#include "server/ops/tcp_listener.h"
#include "server/ops/tls_identity.h"
#include "server/rpc/call_dispatcher.h"
#include "server/rpc/call_door.h"
#include "server/rpc/h2_transport.h"
#include "server/rpc/health_service.h"
#include "server/rpc/read_executor.h"
#include "server/rpc/reflection.h"
#include "server/services/admin_service.h"
#include "server/services/cluster_service.h"
#include "server/services/flow_state_service.h"
#include "server/services/heartbeat_handler.h"
#include "server/services/heartbeat_service.h"
#include "server/services/replica_service.h"
#include "server/watch/flow_state_watch.h"

namespace metasrv::server {

// Thread safety: Shutdown() and Wait() may be called from any thread.
class MetasrvServer final : public core::LeadershipListener {
 public:
  // Builds everything from checked options and starts serving: it only
  // wires. kUnavailable if it cannot listen; kInvalidArgument or
  // kFailedPrecondition if the store refuses its credentials.
  static absl::StatusOr<std::unique_ptr<MetasrvServer>> Start(
      const CheckedOptions& checked);
  // CheckOptions(options) (checked_options.h), then the above: its errors too.
  static absl::StatusOr<std::unique_ptr<MetasrvServer>> Start(
      ServerOptions options);
  ~MetasrvServer() override;

  // Stops accepting calls, ends the open heartbeat streams with UNAVAILABLE,
  // and waits up to the grace period for calls in flight. Idempotent.
  void Shutdown();
  // Blocks until the server has shut down.
  void Wait();

  // Re-reads the files the options name (SIGHUP): a new admin token applies
  // to the next admin call; TLS files are watched anyway (new connections
  // use a renewed certificate within kTlsRefreshSeconds); a changed store
  // password applies at the store's next login or connection, as do the
  // SQL stores' certificates (etcd's apply at the next start). An
  // unreadable or bad file is logged and nothing changes. With `latest`
  // (the settings as the command line, environment and config file give
  // them now; null: not re-read), what can change live does (--log_level),
  // and each other changed setting is logged as needing a restart. Never
  // stops the server. Thread-safe; one at a time.
  void Reload(const ServerOptions* latest = nullptr)
      ABSL_LOCKS_EXCLUDED(reload_mu_);

  int port() const { return port_; }
  // Port of /metrics, /health and /ready; 0 when not served.
  int metrics_port() const { return http_ == nullptr ? 0 : http_->port(); }
  const std::string& advertised_addr() const { return advertised_addr_; }

  // The parts, for an embedder (and tests) to inspect or drive directly;
  // main() uses none of them. Each lives as long as the server.
  // The flow state and in-memory KV (thread-safe).
  core::FlowStateManager& flow_state() { return flow_state_; }
  // Heartbeat streams open now.
  uint64_t heartbeat_streams() const {
    return door_->ledger().open(CallKind::kHeartbeat);
  }
  WatchHub& watch() { return *watch_; }  // WatchFlowState's publisher.
  // Who leads, as this replica sees it.
  const core::Leadership& leadership() const { return *leadership_; }

  // core::LeadershipListener: every leadership change resets the flow state
  // (and so the in-memory KV).
  uint64_t OnBecomeLeader() override;
  uint64_t OnStepDown() override;

 private:
  // `bind_addr`: the checked one, with the port bound when it was 0.
  MetasrvServer(const CheckedOptions& checked, std::string bind_addr,
                DescriptorCeilings ceilings);
  // The steps of Start(), in order. Standalone or an election (not
  // started yet).
  absl::Status StartLeadership();
  // The election --backend names, not started.
  absl::StatusOr<std::unique_ptr<Election>> MakeElection();
  // What this replica registers about itself in the election's store.
  std::function<core::MetasrvNodeInfo()> Describe();
  // The TLS material and credentials for etcd, from the files read.
  EtcdSecurity StoreSecurity() const;
  // Metrics, the watch hub, node expiry, the HTTP endpoints.
  absl::Status StartSupport();
  // The heartbeat logic and the gRPC services.
  absl::Status MakeServices();
  // Starts the transport (HTTP/2 on nghttp2) with the services, and
  // accepting into it.
  absl::Status Serve();
  // Says where it serves.
  void LogServing() const;
  // The TLS identity the transport serves from (tls_identity_).
  absl::Status MakeTlsIdentity();
  // What the transport's acceptor tells of: refused connections,
  // accepting or not.
  H2Transport::AcceptListeners AcceptListeners();
  // How often the TLS files are read again, seconds.
  static constexpr unsigned int kTlsRefreshSeconds = 2;
  // /metrics, /health and /ready.
  HttpServer::Routes HttpRoutes();
  // What LeaderChange does.
  absl::StatusOr<uint64_t> LeaderChange();

  const ServerOptions options_;  // As checked; bind_addr with its port.
  // bind_addr as configured (its port may be 0), to compare a reload with.
  const std::string configured_bind_addr_;
  const SettingFiles files_;  // What the files the options name held.
  absl::Mutex reload_mu_;     // One Reload() at a time; guards below.
  // What they held at the last Reload() (files_ before it).
  SettingFiles reloaded_files_ ABSL_GUARDED_BY(reload_mu_) = files_;
  // The log level in force (set at start, changed by a reload).
  std::string log_level_ ABSL_GUARDED_BY(reload_mu_) = options_.log_level;
  // Descriptors each port's connections may take (soft limit raised first).
  const DescriptorCeilings descriptor_ceilings_;
  // The gRPC port: bound by Start() (port 0) or Serve(), then the
  // transport's.
  std::unique_ptr<TcpListener> listener_;
  int port_ = 0;                 // The port bound.
  std::string advertised_addr_;  // What AskLeader answers.
  // What this replica says about itself (MetasrvPeers, candidate info).
  std::unique_ptr<SelfDescription> self_description_;
  // Flow state and the in-memory KV that shows it.
  core::FlowStateManager flow_state_{options_.flow_state, options_.clock};
  // Flownodes whose reports are refused, for ListFlownodes.
  RefusedReports refused_{options_.clock};
  // The alerting metrics of each scrape, over flow_state_.
  FlowAlertsSource flow_alerts_{&flow_state_, options_.flow_alerts};
  std::unique_ptr<core::Leadership> leadership_;  // Who leads.
  Election* election_ = nullptr;      // leadership_ when elected, else null.
  std::unique_ptr<Metrics> metrics_;  // Prometheus metrics.
  std::unique_ptr<HttpServer> http_;  // /metrics, /health, /ready; or null.
  // The transport's TLS contexts, from tls_identity_; or null.
  std::unique_ptr<H2Tls> h2_tls_;
  // The certificate the gRPC port serves, rotated to matching pairs only
  // into h2_tls_ (declared after it, so stopped first); or null.
  std::unique_ptr<TlsIdentity> tls_identity_;
  // Reads, off the transport's loops.
  // Declared before the services and the server, so it outlives their calls.
  ReadExecutor reads_{options_.reads};
  // Every call comes through it: charged per peer, admitted, bounded; the
  // one exit of answers (the hub's shared states too, so it outlives it).
  std::unique_ptr<CallDoor> door_;
  std::unique_ptr<WatchHub> watch_;            // WatchFlowState pushes.
  std::unique_ptr<NodeExpirer> expirer_;       // With a node TTL, else null.
  std::unique_ptr<HeartbeatHandler> handler_;  // Per-request logic.
  std::unique_ptr<HeartbeatService> heartbeat_service_;   // Heartbeat.
  std::unique_ptr<ClusterService> cluster_service_;       // Cluster.
  std::unique_ptr<FlowStateService> flow_state_service_;  // FlowState.
  std::unique_ptr<AdminService> admin_service_;           // Admin.
  std::unique_ptr<ReplicaService> replica_service_;       // Replica.
  std::unique_ptr<ReflectionV1Service> reflection_v1_;    // Reflection v1.
  std::unique_ptr<ReflectionV1alphaService> reflection_v1alpha_;  // v1alpha.
  std::unique_ptr<HealthService> health_;  // grpc.health.v1.Health.
  // Takes every call and hands it to its method; outlives the transport.
  std::unique_ptr<CallDispatcher> dispatcher_;
  std::unique_ptr<H2Transport> transport_;  // HTTP/2 on nghttp2; its loops.
  // transport_ once it serves, for the scrape's thread.
  std::atomic<const H2Transport*> serving_{nullptr};
  absl::Mutex shutdown_mu_;                 // Guards below.
  bool shut_down_ ABSL_GUARDED_BY(shutdown_mu_) = false;  // Shutdown() ran.
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_METASRV_SERVER_H_
