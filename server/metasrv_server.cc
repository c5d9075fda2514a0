#include "server/metasrv_server.h"

#include <unistd.h>

#include <algorithm>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "grpc/health/v1/health.pb.h"
#include "server/election/lease_election.h"
#include "server/election/sql_lease_store.h"
#include "server/ops/log_limit.h"
#include "server/ops/net_util.h"
#include "spdlog/spdlog.h"

#ifndef METASRV_VERSION
#define METASRV_VERSION "dev"
#endif

namespace metasrv::server {
namespace {

// Calls of `kind` open now, for a gauge (0 before the door exists).
double OpenOf(const CallDoor* door, CallKind kind) {
  return door == nullptr ? 0 : static_cast<double>(door->ledger().open(kind));
}

// How long, past the shutdown grace, calls may take to end (each was
// cancelled by then) before the server stops waiting.
constexpr absl::Duration kCallsEndSlack = absl::Seconds(10);

ServerOptions BoundTo(ServerOptions options, std::string bind_addr) {
  options.bind_addr = std::move(bind_addr);
  return options;
}

}  // namespace

MetasrvServer::MetasrvServer(const CheckedOptions& checked,
                             std::string bind_addr, DescriptorCeilings ceilings)
    : options_(BoundTo(checked.options(), std::move(bind_addr))),
      configured_bind_addr_(checked.options().bind_addr),
      files_(checked.files()),
      descriptor_ceilings_(ceilings) {}

absl::StatusOr<std::unique_ptr<MetasrvServer>> MetasrvServer::Start(
    ServerOptions options) {
  absl::StatusOr<CheckedOptions> checked = CheckOptions(std::move(options));
  if (!checked.ok()) return checked.status();
  return Start(*checked);
}

absl::StatusOr<std::unique_ptr<MetasrvServer>> MetasrvServer::Start(
    const CheckedOptions& checked) {
  std::string bind_addr = checked.options().bind_addr;
  // The advertised address needs the port: port 0 is bound now, to learn
  // it. A given port is bound only once every setting has been checked
  // (Serve()), so that a bad one is reported as such even if the port is
  // taken.
  std::string host;
  int requested_port = 0;
  if (absl::Status split = SplitHostPort(bind_addr, &host, &requested_port);
      !split.ok()) {
    return split;
  }
  const DescriptorCeilings ceilings =
      DescriptorCeilings::For(RaiseDescriptorLimit());
  std::unique_ptr<TcpListener> listener;
  if (requested_port == 0) {
    absl::StatusOr<std::unique_ptr<TcpListener>> bound =
        TcpListener::Listen(bind_addr, "--bind_addr");
    if (!bound.ok()) return bound.status();
    listener = *std::move(bound);
    bind_addr = JoinHostPort(host, listener->port());
  }
  std::unique_ptr<MetasrvServer> s(
      new MetasrvServer(checked, std::move(bind_addr), ceilings));
  s->listener_ = std::move(listener);
  // Never a wildcard: clients dial what AskLeader and MetasrvPeers say.
  absl::StatusOr<std::string> advertised = AdvertisableAddress(
      s->options_.server_addr.empty() ? s->options_.bind_addr
                                      : s->options_.server_addr);
  if (!advertised.ok()) return advertised.status();
  s->advertised_addr_ = *advertised;
  s->self_description_ =
      std::make_unique<SelfDescription>(s->advertised_addr_, s->options_.clock);
  absl::Status started = s->StartLeadership();
  if (started.ok()) started = s->StartSupport();
  if (started.ok()) started = s->MakeServices();
  if (started.ok()) started = s->Serve();
  if (!started.ok()) return started;
  if (s->election_ != nullptr) s->election_->Start();
  return s;
}

absl::Status MetasrvServer::StartLeadership() {
  if (options_.store_addrs.empty()) {
    leadership_ =
        std::make_unique<core::StandaloneLeadership>(advertised_addr_);
    return absl::OkStatus();
  }
  absl::StatusOr<std::unique_ptr<Election>> election = MakeElection();
  if (!election.ok()) return election.status();
  // A wrong CA or password is an error now; the store being down is not
  // (the election waits for it).
  absl::Status access = (*election)->CheckAccess(absl::Seconds(3));
  if (access.code() == absl::StatusCode::kFailedPrecondition ||
      access.code() == absl::StatusCode::kInvalidArgument) {
    return access;
  }
  if (!access.ok()) {
    spdlog::warn("{} not reachable yet ({}); the election will retry",
                 options_.backend, access.ToString());
  }
  election_ = election->get();
  leadership_ = *std::move(election);
  return absl::OkStatus();
}

std::function<core::MetasrvNodeInfo()> MetasrvServer::Describe() {
  return [self = self_description_.get()] { return self->Now(); };
}

absl::StatusOr<std::unique_ptr<Election>> MetasrvServer::MakeElection() {
  const std::string election_key =
      absl::StrCat(options_.store_key_prefix, options_.election_name);
  if (options_.backend == "etcd_store") {
    EtcdElectionOptions etcd;
    etcd.endpoints = options_.store_addrs;
    etcd.name = election_key;
    etcd.self_addr = advertised_addr_;
    etcd.lease_ttl = options_.lease_ttl;
    etcd.security = StoreSecurity();
    etcd.describe = Describe();
    return std::make_unique<EtcdElection>(std::move(etcd), options_.clock,
                                          this);
  }
  // CheckOptions let only these through.
  const bool postgres = options_.backend == "postgres_store";
  // The SQL client libraries read their TLS files by path themselves.
  LeaseStoreOptions store;
  store.address = absl::StrJoin(options_.store_addrs, ",");
  store.tls_mode =
      options_.store_tls_mode == "disable" ? "" : options_.store_tls_mode;
  store.ca_path = options_.store_tls_ca;
  store.cert_path = options_.store_tls_cert;
  store.key_path = options_.store_tls_key;
  store.password = files_.store_password;
  std::unique_ptr<LeaseStore> lease_store =
      postgres ? MakePostgresLeaseStore(std::move(store))
               : MakeMysqlLeaseStore(std::move(store));
  LeaseElectionOptions election;
  election.store_name = postgres ? "PostgreSQL" : "MySQL";
  election.name = election_key;
  election.self_addr = advertised_addr_;
  election.lease_ttl = options_.lease_ttl;
  election.describe = Describe();
  return std::make_unique<LeaseElection>(
      std::move(election), std::move(lease_store), options_.clock, this);
}

EtcdSecurity MetasrvServer::StoreSecurity() const {
  EtcdSecurity security;
  const std::string& mode = options_.store_tls_mode;
  security.tls =
      mode == "require" || mode == "verify_ca" || mode == "verify_full";
  security.ca_pem = files_.store_tls_ca;
  security.cert_pem = files_.store_tls_cert;
  security.key_pem = files_.store_tls_key;
  security.username = options_.store_username;
  security.password = files_.store_password;
  return security;
}

absl::Status MetasrvServer::StartSupport() {
  metrics_ = std::make_unique<Metrics>(
      Metrics::Sources{
          [this] { return OpenOf(door_.get(), CallKind::kHeartbeat); },
          [this] { return static_cast<double>(flow_state_.node_count()); },
          [this] { return static_cast<double>(flow_state_.flow_count()); },
          [this] { return leadership_->IsLeader() ? 1.0 : 0.0; },
          [this] { return static_cast<double>(flow_state_.size()); },
          [this] { return OpenOf(door_.get(), CallKind::kWatch); },
          [this] { return leadership_->LeaderAddr().empty() ? 0.0 : 1.0; },
          [this] {
            return election_ != nullptr ? election_->Health() : StoreHealth{};
          },
          [this] { return flow_alerts_.Compute(options_.clock->Now()); },
          [this] {
            TransportLoad load;
            if (const H2Transport* t = serving_.load()) {
              load.connections = static_cast<double>(t->connections());
              load.request_bytes_held =
                  static_cast<double>(t->held_request_bytes());
            }
            if (door_ != nullptr) {
              load.calls = static_cast<double>(door_->ledger().open_calls());
              load.refusing = door_->Refusing().empty() ? 0 : 1;
            }
            return load;
          }},
      options_.metrics_reuse_threshold, options_.clock);
  // The door first: the hub charges the states it shares through it.
  AdminAuth auth;
  if (!options_.admin_token_file.empty()) {
    absl::StatusOr<AdminAuth> token =
        AdminAuth::FromToken(files_.admin_token, options_.admin_token_file);
    if (!token.ok()) return token.status();
    auth = *std::move(token);
  }
  door_ =
      std::make_unique<CallDoor>(leadership_.get(), std::move(auth),
                                 options_.door, options_.clock, metrics_.get());
  watch_ =
      std::make_unique<WatchHub>(&flow_state_, options_.watch, metrics_.get(),
                                 door_.get(), options_.clock);
  flow_state_.SetListener(watch_.get());
  watch_->Start();
  if (options_.flow_state.node_report_ttl > absl::ZeroDuration() ||
      options_.flow_state.node_max_idle_time > absl::ZeroDuration()) {
    expirer_ = std::make_unique<NodeExpirer>(
        &flow_state_,
        NodeExpirer::PeriodFor(options_.flow_state.node_report_ttl,
                               options_.flow_state.node_max_idle_time),
        metrics_.get());
  }
  if (options_.metrics_addr.empty()) return absl::OkStatus();
  HttpServer::Options http_options;
  http_options.descriptor_ceiling = descriptor_ceilings_.http;
  http_options.max_connections = descriptor_ceilings_.http_connections;
  http_options.on_drop = [metrics = metrics_.get()](HttpDrop why) {
    metrics->ConnectionDropped(
        why == HttpDrop::kLate      ? ConnectionDrop::kHttpLate
        : why == HttpDrop::kEvicted ? ConnectionDrop::kHttpEvicted
                                    : ConnectionDrop::kHttpRefused);
  };
  absl::StatusOr<std::unique_ptr<HttpServer>> http = HttpServer::Start(
      options_.metrics_addr, HttpRoutes(), std::move(http_options));
  if (!http.ok()) return http.status();
  http_ = *std::move(http);
  return absl::OkStatus();
}

absl::Status MetasrvServer::MakeServices() {
  handler_ = std::make_unique<HeartbeatHandler>(&flow_state_, leadership_.get(),
                                                options_.heartbeat,
                                                metrics_.get(), &refused_);
  std::function<StoreHealth()> store;
  if (election_ != nullptr) store = [this] { return election_->Health(); };
  heartbeat_service_ = std::make_unique<HeartbeatService>(
      handler_.get(), leadership_.get(), [this, store] {
        return NoLeaderReason(*leadership_, options_.backend, &store);
      });
  replica_service_ = std::make_unique<ReplicaService>(
      leadership_.get(), self_description_.get(), options_.backend, store);
  cluster_service_ =
      std::make_unique<ClusterService>(&flow_state_, leadership_.get(), &reads_,
                                       self_description_.get(), metrics_.get());
  flow_state_service_ = std::make_unique<FlowStateService>(
      &flow_state_, &reads_, watch_.get(), metrics_.get(), &refused_);
  admin_service_ = std::make_unique<AdminService>(
      [this] { return LeaderChange(); }, &flow_state_);
  reflection_v1_ = std::make_unique<ReflectionV1Service>(ServiceNames());
  reflection_v1alpha_ =
      std::make_unique<ReflectionV1alphaService>(ServiceNames());
  health_ = std::make_unique<HealthService>(
      [door = door_.get()] { return !door->Refusing().empty(); });
  // Every method; the dispatcher holds every call to the door and the
  // request bound.
  dispatcher_ = std::make_unique<CallDispatcher>(
      &metrics_->calls(), door_.get(),
      static_cast<size_t>(options_.transport.limits.max_message_bytes));
  heartbeat_service_->Register(dispatcher_.get());
  cluster_service_->Register(dispatcher_.get());
  flow_state_service_->Register(dispatcher_.get());
  admin_service_->Register(dispatcher_.get());
  replica_service_->Register(dispatcher_.get());
  reflection_v1_->Register(dispatcher_.get());
  reflection_v1alpha_->Register(dispatcher_.get());
  health_->Register(dispatcher_.get());
  return absl::OkStatus();
}

absl::Status MetasrvServer::Serve() {
  if (listener_ == nullptr) {
    absl::StatusOr<std::unique_ptr<TcpListener>> bound =
        TcpListener::Listen(options_.bind_addr, "--bind_addr");
    if (!bound.ok()) return bound.status();
    listener_ = *std::move(bound);
  }
  // gRPC's health service has no protobuf descriptor; ours (from Debian's
  // grpc-proto) must be linked in for reflection to describe it. A static
  // library drops an object nothing refers to: this refers to it.
  (void)grpc::health::v1::HealthCheckRequest::descriptor();
  port_ = listener_->port();
  // The transport's settings whole; what it takes from the door and the
  // process is set here.
  H2TransportOptions h2 = options_.transport;
  h2.ipv4_prefix_bits = options_.door.peers.ipv4_prefix_bits;
  // A share of the descriptors gRPC connections may take, kept below the
  // acceptor's ceiling so that the share, not the ceiling, decides.
  h2.max_connections =
      std::max(16, DescriptorCeilings::For(RaiseDescriptorLimit()).grpc - 128);
  h2.limits.write_stall_limit = options_.door.reply_stall_limit;
  h2.limits.preface_limit = options_.door.request_timeout;
  if (!files_.tls_cert.empty()) {
    if (absl::Status made = MakeTlsIdentity(); !made.ok()) return made;
    h2.tls = h2_tls_.get();
  }
  h2.descriptor_ceiling = descriptor_ceilings_.grpc;
  transport_ = std::make_unique<H2Transport>(h2, dispatcher_.get());
  transport_->Start(std::move(listener_), AcceptListeners());
  serving_.store(transport_.get());
  dispatcher_->SweepOn(transport_.get());
  LogServing();
  return absl::OkStatus();
}

H2Transport::AcceptListeners MetasrvServer::AcceptListeners() {
  H2Transport::AcceptListeners listeners;
  listeners.on_refused = [metrics = metrics_.get()] {
    metrics->ConnectionDropped(ConnectionDrop::kGrpcRefused);
  };
  listeners.on_accepting = [health = health_.get()](bool accepting) {
    LogLimited(accepting ? spdlog::level::info : spdlog::level::err,
               "accepting", "",
               accepting ? "accepting gRPC connections again"
                         : "refusing gRPC connections: out of file "
                           "descriptors (see metasrv_connections_refused_"
                           "total, process_open_fds, process_max_fds)");
    health->SetServing(accepting);
  };
  return listeners;
}

void MetasrvServer::LogServing() const {
  spdlog::info(
      "metasrv {} serving on {} (advertised as {}){}{}", METASRV_VERSION,
      options_.bind_addr, advertised_addr_,
      transport_ != nullptr ? " over nghttp2" : "",
      options_.tls_cert.empty()
          ? ""
          : (options_.tls_client_ca.empty() ? " with TLS" : " with mTLS"));
  if (http_ == nullptr) return;
  std::string metrics_host;
  int ignored_port = 0;
  SplitHostPort(options_.metrics_addr, &metrics_host, &ignored_port)
      .IgnoreError();
  spdlog::info(
      "metrics, health and readiness on http://{}/{{metrics,health,ready}}",
      JoinHostPort(metrics_host, http_->port()));
}

HttpServer::Routes MetasrvServer::HttpRoutes() {
  HttpServer::Routes routes;
  routes["/metrics"] = [this] {
    return HttpAnswer{200, "text/plain; version=0.0.4; charset=utf-8",
                      metrics_->Scrape()};
  };
  // The process is up and serving gRPC.
  routes["/health"] = [this] {
    absl::MutexLock lock(&shutdown_mu_);
    if (shut_down_)
      return HttpAnswer{503, "text/plain; charset=utf-8", "shutting down\n"};
    if (!DescriptorFreeBelow(descriptor_ceilings_.grpc)) {
      return HttpAnswer{503, "text/plain; charset=utf-8",
                        "not accepting gRPC connections: out of file "
                        "descriptors\n"};
    }
    // Liveness is the process's: a flood must not turn into a restart
    // (which would reset every flownode's state); the refusal is named.
    const std::string refusing = door_->Refusing();
    return HttpAnswer{200, "text/plain; charset=utf-8",
                      refusing.empty()
                          ? std::string("serving\n")
                          : absl::StrCat("serving; but ", refusing, "\n")};
  };
  // GreptimeDB's admin paths, answered as its metasrv answers them
  // (src/meta-srv/src/service/admin/{health,leader}.rs): health is always
  // "OK"; the leader is its address as text, or "election info is None"
  // without an election (standalone), or 500 while none is known.
  routes["/admin/health"] = [] {
    return HttpAnswer{200, "text/plain; charset=utf-8", "OK\n"};
  };
  routes["/admin/leader"] = [this] {
    if (election_ == nullptr) {
      return HttpAnswer{200, "text/plain; charset=utf-8",
                        "election info is None"};
    }
    const std::string leader = leadership_->LeaderAddr();
    if (leader.empty()) {
      return HttpAnswer{500, "text/plain; charset=utf-8",
                        "no leader is known yet"};
    }
    return HttpAnswer{200, "text/plain; charset=utf-8", leader};
  };
  // Useful to clients: the leader, or a follower that can name it.
  routes["/ready"] = [this] {
    // A replica whose gRPC port turns away every new call of a kind that
    // matters serves nobody: a load balancer should send clients elsewhere.
    if (const std::string refusing = door_->Refusing(); !refusing.empty()) {
      return HttpAnswer{503, "text/plain; charset=utf-8",
                        absl::StrCat("not ready: ", refusing, "\n")};
    }
    if (leadership_->IsLeader()) {
      return HttpAnswer{200, "text/plain; charset=utf-8", "leader\n"};
    }
    const std::string leader = leadership_->LeaderAddr();
    if (leader.empty()) {
      return HttpAnswer{503, "text/plain; charset=utf-8",
                        "not ready: no leader is known\n"};
    }
    return HttpAnswer{200, "text/plain; charset=utf-8",
                      absl::StrCat("follower; the leader is ", leader, "\n")};
  };
  return routes;
}

absl::Status MetasrvServer::MakeTlsIdentity() {
  // CheckOptions checked the files once (a key of another pair is refused
  // there). TlsIdentity re-reads them every kTlsRefreshSeconds and hands
  // the transport only a changed pair that matches: a certificate renewed
  // in place serves every new connection, a botched rotation none (the
  // last good one serves on), and the open connections stay as they are.
  h2_tls_ = std::make_unique<H2Tls>();
  absl::StatusOr<std::unique_ptr<TlsIdentity>> identity = TlsIdentity::Create(
      {options_.tls_cert, options_.tls_key, options_.tls_client_ca},
      {files_.tls_cert, files_.tls_key, files_.tls_client_ca},
      absl::Seconds(kTlsRefreshSeconds),
      [tls = h2_tls_.get()](const TlsPem& pem) { return tls->Use(pem); },
      metrics_.get());
  if (!identity.ok()) return identity.status();
  tls_identity_ = *std::move(identity);
  return absl::OkStatus();
}

uint64_t MetasrvServer::OnBecomeLeader() {
  metrics_->LeaderChanged(LeaderChangeCause::kElected);
  return flow_state_.Reset().term;
}

uint64_t MetasrvServer::OnStepDown() {
  metrics_->LeaderChanged(LeaderChangeCause::kSteppedDown);
  const absl::Status stepped_down =
      absl::AbortedError("not leader: this metasrv stepped down");
  door_->ledger().AbortAll(CallKind::kHeartbeat, stepped_down);
  door_->ledger().AbortAll(CallKind::kWatch, stepped_down);
  return flow_state_.Reset().dropped_keys;
}

absl::StatusOr<uint64_t> MetasrvServer::LeaderChange() {
  if (election_ != nullptr) return election_->Resign();
  metrics_->LeaderChanged(LeaderChangeCause::kAdmin);
  return flow_state_.Reset().dropped_keys;
}

MetasrvServer::~MetasrvServer() {
  // The threads stop in the order of ops/threads.cc's table, whether or not
  // Shutdown() came first: /health says NOT_SERVING while calls drain.
  Shutdown();
  Wait();
  http_.reset();  // Its handlers use the members below.
  if (watch_ != nullptr) {
    flow_state_.SetListener(nullptr);
    watch_->Stop();
  }
}

void MetasrvServer::Shutdown() {
  {
    absl::MutexLock lock(&shutdown_mu_);
    if (shut_down_ || transport_ == nullptr) return;
    shut_down_ = true;
  }
  // Hand leadership over first, so another replica takes the streams.
  if (election_ != nullptr) election_->Stop();
  spdlog::info("shutting down: ending {} heartbeat streams",
               door_->ledger().open(CallKind::kHeartbeat));
  transport_->StopAccepting();  // First: it sets the health status too.
  health_->Shutdown();
  if (expirer_ != nullptr) expirer_->Stop();
  const absl::Status shutting_down =
      absl::UnavailableError("metasrv is shutting down");
  watch_->Stop();
  door_->ledger().Close(CallKind::kHeartbeat, shutting_down);
  door_->ledger().Close(CallKind::kWatch, shutting_down);
  transport_->Shutdown();  // GOAWAY; the calls open finish.
}

void MetasrvServer::Wait() {
  if (transport_ == nullptr) return;
  // The calls open finish within the grace; then every connection closes
  // (which ends the calls left).
  dispatcher_->WaitForCalls(absl::Now() + options_.shutdown_grace);
  transport_->Stop();
  if (!dispatcher_->WaitForCalls(absl::Now() + kCallsEndSlack)) {
    spdlog::error("shutting down: {} calls did not end; stopping anyway",
                  dispatcher_->live_calls());
  }
}

}  // namespace metasrv::server
