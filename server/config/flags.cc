#include "server/config/flags.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "server/config/config_file.h"
#include "server/ops/logging.h"
#include "server/ops/net_util.h"

ABSL_FLAG(std::string, bind_addr, "127.0.0.1:3002",
          "host:port to serve gRPC on (port 0 picks a free one)");
ABSL_FLAG(std::string, server_addr, "",
          "address advertised to clients (AskLeader, election); "
          "default: --bind_addr");
ABSL_FLAG(std::vector<std::string>, store_addrs, {},
          "where the election runs (see --backend): etcd endpoints "
          "(host:port, comma-separated), a PostgreSQL connection string or "
          "URI, or mysql://user:password@host:port/database. Empty: "
          "standalone, always the leader");
ABSL_FLAG(absl::Duration, lease_ttl, absl::Seconds(5),
          "lease TTL of the election (whole seconds, >= 2s); renewed every "
          "TTL/3");
ABSL_FLAG(std::string, election_name, "__metasrv_election",
          "name of the etcd election");
ABSL_FLAG(absl::Duration, heartbeat_interval, absl::Seconds(3),
          "heartbeat interval told to clients at handshake");
ABSL_FLAG(absl::Duration, retry_interval, absl::Seconds(3),
          "retry interval told to clients at handshake");
ABSL_FLAG(absl::Duration, shutdown_grace, absl::Seconds(1),
          "how long shutdown waits for calls in flight");
ABSL_FLAG(int, read_threads, 2,
          "threads that serve GetFlowState and Cluster reads, off gRPC's "
          "threads; 0 serves them on gRPC's threads");
ABSL_FLAG(std::string, metrics_addr, "127.0.0.1:4000",
          "host:port of the Prometheus endpoint (/metrics); empty: none");
ABSL_FLAG(std::string, tls_cert, "",
          "PEM certificate chain; with --tls_key, serve TLS only");
ABSL_FLAG(std::string, tls_key, "", "PEM private key of --tls_cert");
ABSL_FLAG(std::string, tls_client_ca, "",
          "PEM CA bundle; clients must present a certificate it signed (mTLS)");
ABSL_FLAG(std::string, admin_token_file, "",
          "file holding the bearer token admin RPCs must carry; empty: admin "
          "RPCs from loopback peers only");
ABSL_FLAG(uint64_t, max_streams, 50000,
          "open heartbeat streams; more get RESOURCE_EXHAUSTED (0: no limit)");
ABSL_FLAG(int, max_message_bytes, 4 << 20, "largest request accepted");
ABSL_FLAG(uint64_t, max_flows_per_report, 100000,
          "a report of more flows ends its stream with INVALID_ARGUMENT");
ABSL_FLAG(uint64_t, max_nodes, 10000,
          "flownodes known at once; a new one past it is refused with "
          "RESOURCE_EXHAUSTED (0: no limit)");
ABSL_FLAG(uint64_t, max_total_flows, 1000000,
          "(node, flow) entries over all reports; a report that would pass it "
          "is refused with RESOURCE_EXHAUSTED (0: no limit)");
ABSL_FLAG(int, max_streams_per_connection, 1000,
          "HTTP/2 streams (calls of any kind) one connection may have open");
ABSL_FLAG(uint64_t, max_reply_bytes_in_flight, 128 << 20,
          "bytes of answers sent but not yet read by clients; past it, new "
          "answers get RESOURCE_EXHAUSTED (0: no limit)");
ABSL_FLAG(uint64_t, grpc_memory_limit, 512 << 20,
          "bytes gRPC itself may use for connections and calls (its "
          "ResourceQuota); bounds what one peer can make it buffer (0: none)");
ABSL_FLAG(uint64_t, max_queued_reads, 64,
          "large reads waiting for a read thread; more get RESOURCE_EXHAUSTED");
ABSL_FLAG(absl::Duration, keepalive_time, absl::Seconds(30),
          "idle time after which a connection is pinged");
ABSL_FLAG(absl::Duration, keepalive_timeout, absl::Seconds(10),
          "a peer that does not answer a ping within this is dropped");
ABSL_FLAG(absl::Duration, node_report_ttl, absl::ZeroDuration(),
          "a flownode silent for longer loses its report and its flows leave "
          "the aggregate; 0 (default): never, as GreptimeDB's metasrv");
ABSL_FLAG(absl::Duration, node_max_idle_time, absl::Hours(24),
          "a node silent for longer leaves the cluster info "
          "(__meta_cluster_node_info keys) and ListFlownodes; its flow state "
          "stays (GreptimeDB's node_max_idle_time); 0: never");
ABSL_FLAG(absl::Duration, watch_min_interval, absl::Milliseconds(500),
          "WatchFlowState pushes at most one state per this interval");
ABSL_FLAG(std::string, log_level, "info",
          "trace, debug, info, warn, error or off");
ABSL_FLAG(std::string, log_format, "text",
          "text (one line per record, UTC RFC 3339 time) or json (one JSON "
          "object per line)");
ABSL_FLAG(std::string, backend, "",
          "memory_store (standalone, always the leader), or a leader "
          "election on --store_addrs: etcd_store, postgres_store or "
          "mysql_store; empty: etcd_store when --store_addrs is set, else "
          "memory_store");
ABSL_FLAG(std::string, store_key_prefix, "",
          "prefix of this cluster's keys in the store (the election key), so "
          "that several clusters can share one etcd or database");
ABSL_FLAG(std::string, backend_tls_mode, "disable",
          "TLS to the store: disable, prefer, require, verify_ca or "
          "verify_full. etcd: disable/prefer are plaintext, the others TLS "
          "with etcd's certificate and name verified; PostgreSQL: libpq's "
          "sslmode (disable leaves it to --store_addrs); MySQL: see README");
ABSL_FLAG(std::string, backend_tls_ca_cert_path, "",
          "PEM CA bundle that signed the store's certificate; empty: the "
          "system's");
ABSL_FLAG(std::string, backend_tls_cert_path, "",
          "PEM client certificate for the store (client-cert-auth)");
ABSL_FLAG(std::string, backend_tls_key_path, "",
          "PEM private key of --backend_tls_cert_path");
ABSL_FLAG(uint64_t, metrics_top_flows, 20,
          "per-flow alerting series (metasrv_flow_state_bytes, "
          "metasrv_flow_exec_lag_seconds) for this many flows each: the "
          "largest and the most lagging; 0: none");
ABSL_FLAG(absl::Duration, flow_stall_after, absl::Minutes(5),
          "a flow whose last execution is older than this is stalled "
          "(metasrv_flows_stalled)");
ABSL_FLAG(absl::Duration, flownode_silent_after, absl::Seconds(30),
          "a flownode not heard from for longer is silent "
          "(metasrv_flownodes_silent)");
ABSL_FLAG(std::string, store_username, "",
          "etcd user (etcd authentication); empty: none");
ABSL_FLAG(std::string, store_password_file, "",
          "file holding --store_username's password");
ABSL_FLAG(std::string, config_file, "",
          "TOML config file (GreptimeDB's metasrv key names; also -c FILE). "
          "Precedence: flags > GREPTIMEDB_METASRV__* environment > file");
ABSL_FLAG(bool, print_config, false,
          "print the effective configuration as TOML and exit");

namespace metasrv::server {

namespace {

// The longest store key prefix with election name.
constexpr size_t kMaxElectionName = 200;

absl::Status Invalid(const char* why) {
  return absl::InvalidArgumentError(why);
}

// The addresses parse.
absl::Status CheckAddresses(const ServerOptions& o) {
  for (const auto& [flag, addr] :
       {std::pair<const char*, const std::string*>{"--bind_addr", &o.bind_addr},
        {"--server_addr", &o.server_addr},
        {"--metrics_addr", &o.metrics_addr}}) {
    if (addr->empty() && std::string_view(flag) != "--bind_addr") continue;
    std::string host;
    int port = 0;
    absl::Status split = SplitHostPort(*addr, &host, &port);
    if (!split.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(flag, ": ", split.message()));
    }
  }
  return absl::OkStatus();
}

// Intervals, limits and sizes are in range.
absl::Status CheckLimits(const ServerOptions& o) {
  if (o.heartbeat_interval_ms == 0 || o.retry_interval_ms == 0) {
    return Invalid(
        "--heartbeat_interval and --retry_interval must be positive");
  }
  if (o.max_streams_per_connection < 1) {
    return Invalid("--max_streams_per_connection must be positive");
  }
  if (o.grpc_memory_limit != 0 && o.grpc_memory_limit < (16 << 20)) {
    return Invalid("--grpc_memory_limit must be 0 or at least 16 MiB");
  }
  if (o.max_queued_reads < 1) {
    return Invalid("--max_queued_reads must be positive");
  }
  if (o.node_report_ttl < absl::ZeroDuration()) {
    return Invalid("--node_report_ttl must not be negative");
  }
  if (o.node_max_idle_time < absl::ZeroDuration()) {
    return Invalid("--node_max_idle_time must not be negative");
  }
  if (o.watch_min_interval < absl::ZeroDuration()) {
    return Invalid("--watch_min_interval must not be negative");
  }
  if (o.max_message_bytes <= 0) {
    return Invalid("--max_message_bytes must be positive");
  }
  if (o.keepalive_time < absl::Seconds(1) ||
      o.keepalive_timeout < absl::Seconds(1)) {
    return Invalid(
        "--keepalive_time and --keepalive_timeout must be at least 1s");
  }
  if (o.flow_alerts.top_flows > 1000) {
    return Invalid("--metrics_top_flows must be at most 1000");
  }
  if (o.flow_alerts.stall_after <= absl::ZeroDuration() ||
      o.flow_alerts.silent_after <= absl::ZeroDuration()) {
    return Invalid(
        "--flow_stall_after and --flownode_silent_after must be positive");
  }
  if (o.read_threads < 0 || o.read_threads > 64) {
    return Invalid("--read_threads must be in [0, 64]");
  }
  return absl::OkStatus();
}

// The store settings and the election name can work.
absl::Status CheckStore(const ServerOptions& o) {
  const std::string& mode = o.store_tls_mode;
  if (mode != "disable" && mode != "prefer" && mode != "require" &&
      mode != "verify_ca" && mode != "verify_full") {
    return Invalid(
        "--backend_tls_mode must be disable, prefer, require, verify_ca or "
        "verify_full");
  }
  if (!o.store_username.empty() && o.store_password_file.empty()) {
    return Invalid("--store_username needs --store_password_file");
  }
  // The election's keys and rows are named by the prefix and the name: a
  // NUL cuts them in libpq (every row one key), invalid UTF-8 is refused by
  // the databases' text columns, and a long one overflows MySQL's key column
  // (512 bytes, with "/candidate/" and the holder after it).
  if (o.election_name.find('\0') != std::string::npos) {
    return Invalid("--store_key_prefix and --election_name must not hold NUL");
  }
  if (!IsValidUtf8(o.election_name)) {
    return Invalid("--store_key_prefix and --election_name must be UTF-8");
  }
  if (o.election_name.size() > kMaxElectionName) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--store_key_prefix and --election_name together must be at most ",
        kMaxElectionName, " bytes (", o.election_name.size(), " given)"));
  }
  return absl::OkStatus();
}

// The TLS pair is whole, and every file a setting names is readable now,
// before anything listens or connects.
absl::Status CheckFiles(const ServerOptions& o) {
  if (o.tls_cert.empty() != o.tls_key.empty()) {
    return Invalid("--tls_cert and --tls_key go together");
  }
  if (!o.tls_client_ca.empty() && o.tls_cert.empty()) {
    return Invalid("--tls_client_ca needs --tls_cert and --tls_key");
  }
  for (const auto& [flag, path] :
       {std::pair<const char*, const std::string*>{"--tls_cert", &o.tls_cert},
        {"--tls_key", &o.tls_key},
        {"--tls_client_ca", &o.tls_client_ca},
        {"--admin_token_file", &o.admin_token_file},
        {"--store_password_file", &o.store_password_file},
        {"--backend_tls_ca_cert_path", &o.store_tls_ca},
        {"--backend_tls_cert_path", &o.store_tls_cert},
        {"--backend_tls_key_path", &o.store_tls_key}}) {
    if (path->empty()) continue;
    absl::Status readable = CheckReadableConfig(*path, flag);
    if (readable.ok() && access(path->c_str(), R_OK) != 0) {
      readable = absl::InvalidArgumentError(
          absl::StrCat(flag, " ", *path, ": ", std::strerror(errno)));
    }
    if (!readable.ok()) {
      return absl::InvalidArgumentError(readable.message());
    }
  }
  return absl::OkStatus();
}

// The lease TTL suits every store.
absl::Status CheckLease(const ServerOptions& o) {
  if (o.lease_ttl < absl::Seconds(2) ||
      o.lease_ttl != absl::Trunc(o.lease_ttl, absl::Seconds(1))) {
    return Invalid(
        "--lease_ttl must be whole seconds, at least 2s (etcd leases are in "
        "seconds)");
  }
  return absl::OkStatus();
}

// Whether `o` is a configuration the server can run; kInvalidArgument naming
// the setting otherwise.
absl::Status Validate(const ServerOptions& o) {
  for (absl::Status (*check)(const ServerOptions&) :
       {&CheckAddresses, &CheckLimits, &CheckStore, &CheckFiles, &CheckLease}) {
    if (absl::Status checked = check(o); !checked.ok()) return checked;
  }
  return absl::OkStatus();
}

// Every duration flag, with the range its consumer accepts: finite always,
// and at most what the consumer can hold (gRPC's keepalive arguments are
// int milliseconds; a heartbeat interval goes to clients as milliseconds;
// etcd and the SQL stores take a lease of at most a day here). A value out
// of range is an error naming the flag (exit 2), never a silent wrap.
absl::Status CheckDurationRanges() {
  struct Range {
    const char* flag;         // Its name.
    absl::Duration value;     // As given.
    absl::Duration min, max;  // Accepted, inclusive.
  };
  const absl::Duration kIntMillis = absl::Milliseconds(2147483647);
  const absl::Duration kTenYears = absl::Hours(24 * 3650);
  const Range ranges[] = {
      {"lease_ttl", absl::GetFlag(FLAGS_lease_ttl), absl::Seconds(2),
       absl::Hours(24)},
      {"heartbeat_interval", absl::GetFlag(FLAGS_heartbeat_interval),
       absl::Milliseconds(1), absl::Hours(24)},
      {"retry_interval", absl::GetFlag(FLAGS_retry_interval),
       absl::Milliseconds(1), absl::Hours(24)},
      {"shutdown_grace", absl::GetFlag(FLAGS_shutdown_grace),
       absl::ZeroDuration(), absl::Hours(1)},
      {"keepalive_time", absl::GetFlag(FLAGS_keepalive_time), absl::Seconds(1),
       kIntMillis},
      {"keepalive_timeout", absl::GetFlag(FLAGS_keepalive_timeout),
       absl::Seconds(1), kIntMillis},
      {"node_report_ttl", absl::GetFlag(FLAGS_node_report_ttl),
       absl::ZeroDuration(), kTenYears},
      {"node_max_idle_time", absl::GetFlag(FLAGS_node_max_idle_time),
       absl::ZeroDuration(), kTenYears},
      {"watch_min_interval", absl::GetFlag(FLAGS_watch_min_interval),
       absl::ZeroDuration(), absl::Hours(1)},
      {"flow_stall_after", absl::GetFlag(FLAGS_flow_stall_after),
       absl::Milliseconds(1), kTenYears},
      {"flownode_silent_after", absl::GetFlag(FLAGS_flownode_silent_after),
       absl::Milliseconds(1), kTenYears},
  };
  for (const Range& r : ranges) {
    if (r.value < r.min || r.value > r.max) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--", r.flag, "=", absl::FormatDuration(r.value),
          " is out of range: it must be between ", absl::FormatDuration(r.min),
          " and ", absl::FormatDuration(r.max)));
    }
  }
  return absl::OkStatus();
}

// Whole milliseconds of `d`; 0 for anything not positive.
uint64_t PositiveMillis(absl::Duration d) {
  return d <= absl::ZeroDuration()
             ? 0
             : static_cast<uint64_t>(absl::ToInt64Milliseconds(d));
}

}  // namespace

absl::StatusOr<ServerOptions> OptionsFromFlags() {
  if (absl::Status ranges = CheckDurationRanges(); !ranges.ok()) return ranges;
  ServerOptions o;
  o.bind_addr = absl::GetFlag(FLAGS_bind_addr);
  o.server_addr = absl::GetFlag(FLAGS_server_addr);
  o.heartbeat_interval_ms =
      PositiveMillis(absl::GetFlag(FLAGS_heartbeat_interval));
  o.retry_interval_ms = PositiveMillis(absl::GetFlag(FLAGS_retry_interval));
  o.shutdown_grace = absl::GetFlag(FLAGS_shutdown_grace);
  o.read_threads = absl::GetFlag(FLAGS_read_threads);
  o.metrics_addr = absl::GetFlag(FLAGS_metrics_addr);
  o.tls_cert = absl::GetFlag(FLAGS_tls_cert);
  o.tls_key = absl::GetFlag(FLAGS_tls_key);
  o.tls_client_ca = absl::GetFlag(FLAGS_tls_client_ca);
  o.admin_token_file = absl::GetFlag(FLAGS_admin_token_file);
  o.max_streams = absl::GetFlag(FLAGS_max_streams);
  o.max_message_bytes = absl::GetFlag(FLAGS_max_message_bytes);
  o.max_flows_per_report = absl::GetFlag(FLAGS_max_flows_per_report);
  o.max_nodes = absl::GetFlag(FLAGS_max_nodes);
  o.max_total_flows = absl::GetFlag(FLAGS_max_total_flows);
  o.max_streams_per_connection =
      absl::GetFlag(FLAGS_max_streams_per_connection);
  o.max_reply_bytes_in_flight = absl::GetFlag(FLAGS_max_reply_bytes_in_flight);
  o.max_queued_reads = absl::GetFlag(FLAGS_max_queued_reads);
  o.grpc_memory_limit = absl::GetFlag(FLAGS_grpc_memory_limit);
  o.keepalive_time = absl::GetFlag(FLAGS_keepalive_time);
  o.keepalive_timeout = absl::GetFlag(FLAGS_keepalive_timeout);
  o.node_report_ttl = absl::GetFlag(FLAGS_node_report_ttl);
  o.node_max_idle_time = absl::GetFlag(FLAGS_node_max_idle_time);
  o.watch_min_interval = absl::GetFlag(FLAGS_watch_min_interval);
  o.flow_alerts.top_flows = absl::GetFlag(FLAGS_metrics_top_flows);
  o.flow_alerts.stall_after = absl::GetFlag(FLAGS_flow_stall_after);
  o.flow_alerts.silent_after = absl::GetFlag(FLAGS_flownode_silent_after);
  o.store_addrs = absl::GetFlag(FLAGS_store_addrs);
  o.store_addrs.erase(
      std::remove(o.store_addrs.begin(), o.store_addrs.end(), ""),
      o.store_addrs.end());
  const std::string backend = absl::GetFlag(FLAGS_backend);
  if (backend == "memory_store") {
    o.store_addrs.clear();
  } else if (backend == "etcd_store" || backend == "postgres_store" ||
             backend == "mysql_store") {
    if (o.store_addrs.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--backend=", backend,
          " needs --store_addrs (etcd endpoints, a PostgreSQL connection "
          "string or a mysql:// URL)"));
    }
    o.backend = backend;
  } else if (!backend.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--backend: '", backend,
        "' is not supported; use memory_store, etcd_store, postgres_store or "
        "mysql_store"));
  }
  o.store_tls_mode = absl::GetFlag(FLAGS_backend_tls_mode);
  o.store_tls_ca = absl::GetFlag(FLAGS_backend_tls_ca_cert_path);
  o.store_tls_cert = absl::GetFlag(FLAGS_backend_tls_cert_path);
  o.store_tls_key = absl::GetFlag(FLAGS_backend_tls_key_path);
  o.store_username = absl::GetFlag(FLAGS_store_username);
  o.store_password_file = absl::GetFlag(FLAGS_store_password_file);
  o.election_name = absl::StrCat(absl::GetFlag(FLAGS_store_key_prefix),
                                 absl::GetFlag(FLAGS_election_name));
  o.lease_ttl = absl::GetFlag(FLAGS_lease_ttl);
  absl::Status valid = Validate(o);
  if (!valid.ok()) return valid;
  return o;
}

absl::Status ApplyLoggingFlags() {
  return ConfigureLogging(absl::GetFlag(FLAGS_log_level),
                          absl::GetFlag(FLAGS_log_format));
}

bool IsServerFlag(const absl::CommandLineFlag& flag) {
  // The flags library keeps the file name without a leading '/'.
  return !flag.Filename().empty() && absl::EndsWith(__FILE__, flag.Filename());
}

std::string ConfigFileFlag() { return absl::GetFlag(FLAGS_config_file); }
bool PrintConfigFlag() { return absl::GetFlag(FLAGS_print_config); }

}  // namespace metasrv::server
