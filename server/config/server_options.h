// What the server is started with: every setting. Its defaults are the
// settings' defaults (the binary's too: settings.cc reads them from here).
// CheckOptions (checked_options.h) checks a ServerOptions and reads the files
// it names; the table of settings (settings.cc) fills one from the command
// line, the environment and the config file.
#ifndef METASRV_SERVER_CONFIG_SERVER_OPTIONS_H_
#define METASRV_SERVER_CONFIG_SERVER_OPTIONS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "core/clock.h"
#include "core/flow_state_limits.h"
#include "server/ops/flow_alerts.h"
#include "server/rpc/call_door.h"
#include "server/rpc/h2_transport.h"
#include "server/rpc/read_executor.h"
#include "server/services/heartbeat_handler.h"
#include "server/watch/flow_state_watch.h"

namespace metasrv::server {

struct ServerOptions {
  // host:port to listen on; port 0 picks a free one.
  std::string bind_addr = "127.0.0.1:3002";
  // The gRPC port (--transport_threads, --max_streams_per_connection,
  // --max_message_bytes, --max_early_resets, --keepalive_time,
  // --keepalive_timeout, --grpc_memory_limit): declared, with their
  // defaults, in rpc/h2_transport.h and rpc/h2_connection.h (H2Limits), and
  // passed to the transport whole.
  H2TransportOptions transport;
  // Address clients are told to use; empty means the bound address.
  std::string server_addr;
  // Where the election runs. Empty: standalone, always the leader.
  // etcd_store: etcd endpoints (host:port); postgres_store: one libpq
  // connection string or URI; mysql_store: one mysql:// URL.
  std::vector<std::string> store_addrs;
  // memory_store, etcd_store, postgres_store or mysql_store; empty:
  // etcd_store with store_addrs, else memory_store (CheckOptions decides).
  std::string backend;
  // Prefix of this cluster's keys in the store, before election_name.
  std::string store_key_prefix;
  std::string election_name = "__metasrv_election";  // With store_addrs.
  absl::Duration lease_ttl = absl::Seconds(5);       // With store_addrs.
  // etcd over TLS (GreptimeDB's [backend_tls]): mode disable or prefer
  // (plaintext), require, verify_ca or verify_full (TLS; the server's
  // certificate and name are always verified), and PEM files.
  std::string store_tls_mode = "disable";
  std::string store_tls_ca, store_tls_cert, store_tls_key;
  // etcd user and a file holding its password; empty user: no auth. Every
  // file is read by CheckOptions, into SettingFiles.
  std::string store_username, store_password_file;
  // What the handshake tells clients (--heartbeat_interval,
  // --retry_interval) and the largest report (--max_flows_per_report):
  // declared, with their defaults, in services/heartbeat_handler.h.
  HeartbeatHandler::Options heartbeat;
  absl::Duration shutdown_grace = absl::Seconds(1);  // For in-flight calls.
  // The read threads and their queue (--read_threads, --max_queued_reads):
  // declared, with their defaults, in rpc/read_executor.h.
  ReadExecutor::Options reads;
  // host:port of the Prometheus /metrics endpoint; empty: none. Tests pass
  // "" or a port-0 address.
  std::string metrics_addr = "127.0.0.1:4000";
  // A /metrics exposition that took this long or more to build is served
  // again for twenty times as long; 0: never (ops/metrics.h).
  absl::Duration metrics_reuse_threshold = absl::Milliseconds(10);
  // PEM files. With cert and key, gRPC is served over TLS only; with a
  // client CA too, clients must present a certificate it signed (mTLS).
  std::string tls_cert, tls_key, tls_client_ca;
  // File holding the admin bearer token; empty: admin calls from loopback only.
  std::string admin_token_file;
  uint64_t max_streams = 50000;     // Open streams of a kind; 0: no limit.
  // The flow state's bounds and expiries (--max_nodes, --max_total_flows,
  // --node_report_ttl, --node_max_idle_time): declared, with their
  // defaults, in core/flow_state_limits.h, and passed to the core whole.
  core::FlowStateLimits flow_state;
  // The door's bounds and deadlines (--max_reply_bytes_in_flight,
  // --max_calls, --max_calls_per_peer, --max_reply_bytes_per_peer,
  // --request_timeout, --heartbeat_silence_limit, --reply_stall_limit):
  // declared, with their defaults, in rpc/call_door.h and rpc/call_ledger.h.
  // A bound left 0 is derived by CheckOptions(), which also bounds each
  // kind of stream by --max_streams.
  DoorOptions door;
  // Alerting metrics: per-flow series for this many flows (0: none), and
  // the thresholds of a stalled flow and a silent flownode.
  FlowAlertOptions flow_alerts;
  // WatchFlowState's pacing (--watch_min_interval): declared, with its
  // default, in watch/flow_state_watch.h.
  WatchHub::Options watch;
  // Logging: trace ... off, and text or json (ops/logging.h). main() sets
  // it up; the server itself does not.
  std::string log_level = "info";
  std::string log_format = "text";
  // Also write the log to hourly files in this folder, keeping the newest
  // log_max_files (GreptimeDB's [logging] dir and max_log_files); empty:
  // stderr only.
  std::string log_dir;
  uint64_t log_max_files = 720;
  // Time of heartbeats and node expiry; borrowed. Tests pass a ManualClock.
  const core::Clock* clock = core::SystemClock();
};

// What the files ServerOptions names hold, read once by CheckOptions.
struct SettingFiles {
  std::string tls_cert, tls_key, tls_client_ca;  // PEM, as read.
  std::string admin_token;     // Surrounding whitespace dropped.
  std::string store_password;  // Trailing whitespace dropped.
  std::string store_tls_ca, store_tls_cert, store_tls_key;  // PEM.
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_CONFIG_SERVER_OPTIONS_H_
