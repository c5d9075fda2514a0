#include "server/config/settings.h"

#include <sys/stat.h>

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/inert_text.h"
#include "server/config/units.h"
#include "server/ops/logging.h"
#include "server/ops/net_util.h"

namespace metasrv::server {
namespace {

using Rows = std::vector<std::unique_ptr<Setting>>;
using Info = Setting::Info;
template <typename T>
using Rule = typename TypedSetting<T>::Rule;

// A row for member `member`.
template <typename T>
void Add(Rows* rows, Info info, T ServerOptions::*member, Rule<T> rule = {}) {
  rows->push_back(std::make_unique<TypedSetting<T>>(
      info, [member](ServerOptions& o) -> T& { return o.*member; },
      std::move(rule)));
}

// A row for member `member` of `inner`, a struct within a component's
// options `group` (the door's peer limits).
template <typename Group, typename Inner, typename T>
void AddIn(Rows* rows, Info info, Group ServerOptions::*group,
           Inner Group::*inner, T Inner::*member, Rule<T> rule = {}) {
  rows->push_back(std::make_unique<TypedSetting<T>>(
      info,
      [group, inner, member](ServerOptions& o) -> T& {
        return ((o.*group).*inner).*member;
      },
      std::move(rule)));
}

// A row for member `member` of a component's options, which ServerOptions
// holds whole as `group` (the component's struct declares the default).
template <typename Group, typename T>
void AddIn(Rows* rows, Info info, Group ServerOptions::*group, T Group::*member,
           Rule<T> rule = {}) {
  rows->push_back(std::make_unique<TypedSetting<T>>(
      info,
      [group, member](ServerOptions& o) -> T& { return (o.*group).*member; },
      std::move(rule)));
}

// The checks rows use; each says what a bad value should have been.
Rule<absl::Duration> Between(absl::Duration min, absl::Duration max) {
  return [min, max](const absl::Duration& d) {
    if (d >= min && d <= max) return absl::OkStatus();
    return absl::InvalidArgumentError(
        absl::StrCat("is out of range: it must be between ", WholeUnits(min),
                     " and ", WholeUnits(max)));
  };
}
template <typename T>
Rule<T> InRange(T min, T max) {
  return [min, max](const T& n) {
    if (n >= min && n <= max) return absl::OkStatus();
    return absl::InvalidArgumentError(
        absl::StrCat("is out of range: it must be in [", min, ", ", max, "]"));
  };
}
Rule<std::string> OneOf(std::vector<std::string> names) {
  return [names = std::move(names)](const std::string& s) {
    if (std::find(names.begin(), names.end(), s) != names.end()) {
      return absl::OkStatus();
    }
    std::vector<std::string> named;
    for (const std::string& name : names) {
      if (!name.empty()) named.push_back(name);
    }
    return absl::InvalidArgumentError(absl::StrCat(
        "is not supported: use ", absl::StrJoin(named, ", "),
        named.size() < names.size() ? " (or leave it empty)" : ""));
  };
}
// host:port; `optional`: or empty.
Rule<std::string> HostPort(bool optional) {
  return [optional](const std::string& addr) {
    if (optional && addr.empty()) return absl::OkStatus();
    std::string host;
    int port = 0;
    absl::Status split = SplitHostPort(addr, &host, &port);
    if (split.ok()) return split;
    return absl::InvalidArgumentError(
        absl::StrCat("is not host:port: ", split.message()));
  };
}
// Part of the election's keys and rows: a NUL cuts them in libpq (every row
// one key), and invalid UTF-8 is refused by the databases' text columns.
absl::Status KeyText(const std::string& s) {
  if (s.find('\0') != std::string::npos) {
    return absl::InvalidArgumentError("must not hold NUL");
  }
  if (!core::IsValidUtf8(s)) return absl::InvalidArgumentError("must be UTF-8");
  return absl::OkStatus();
}

constexpr absl::Duration kIntMillis = absl::Milliseconds(2147483647);
constexpr absl::Duration kTenYears = absl::Hours(24 * 3650);
constexpr absl::Duration kDay = absl::Hours(24);

// The addresses served, TLS and admin rights.
void ServingRows(Rows* r) {
  Add(r,
      {"bind_addr", "grpc.bind_addr",
       "host:port to serve gRPC on (port 0 picks a free one)", true},
      &ServerOptions::bind_addr, HostPort(false));
  Add(r,
      {"server_addr", "grpc.server_addr",
       "address advertised to clients (AskLeader, election); empty: the "
       "bind address (never a wildcard)",
       true},
      &ServerOptions::server_addr, HostPort(true));
  Add(r,
      {"metrics_addr", "http.addr",
       "host:port of the Prometheus endpoint (/metrics, /health, /ready); "
       "empty: none",
       true},
      &ServerOptions::metrics_addr, HostPort(true));
  Add(r,
      {"metrics_reuse_threshold", nullptr,
       "a /metrics exposition that took this long or more to build is "
       "served again for twenty times as long, so that a flood of scrapes "
       "costs a small part of a core; 0: every scrape is built afresh",
       false},
      &ServerOptions::metrics_reuse_threshold,
      Between(absl::ZeroDuration(), absl::Seconds(10)));
  Add(r,
      {"tls_cert", nullptr,
       "PEM certificate chain; with --tls_key, serve TLS only", true,
       &SettingFiles::tls_cert},
      &ServerOptions::tls_cert);
  Add(r,
      {"tls_key", nullptr, "PEM private key of --tls_cert", true,
       &SettingFiles::tls_key},
      &ServerOptions::tls_key);
  Add(r,
      {"tls_client_ca", nullptr,
       "PEM CA bundle; clients must present a certificate it signed "
       "(mTLS)",
       false, &SettingFiles::tls_client_ca},
      &ServerOptions::tls_client_ca);
  Add(r,
      {"admin_token_file", nullptr,
       "file holding the bearer token admin RPCs must carry; empty: admin "
       "RPCs from loopback peers only",
       true, &SettingFiles::admin_token},
      &ServerOptions::admin_token_file);
}

// What clients are told, and how their connections and calls are kept.
void ClientRows(Rows* r) {
  AddIn(r,
        {"heartbeat_interval", "heartbeat_interval",
         "heartbeat interval told to clients at handshake", false},
        &ServerOptions::heartbeat,
        &HeartbeatHandler::Options::heartbeat_interval,
        Between(absl::Milliseconds(1), kDay));
  AddIn(r,
        {"retry_interval", nullptr,
         "retry interval told to clients at handshake", false},
        &ServerOptions::heartbeat, &HeartbeatHandler::Options::retry_interval,
        Between(absl::Milliseconds(1), kDay));
  Add(r,
      {"shutdown_grace", nullptr, "how long shutdown waits for calls in flight",
       false},
      &ServerOptions::shutdown_grace,
      Between(absl::ZeroDuration(), absl::Hours(1)));
  AddIn(r,
        {"read_threads", nullptr,
         "threads that serve GetFlowState and Cluster reads, off the "
         "transport's loops; 0 serves them on the loops",
         false},
        &ServerOptions::reads, &ReadExecutor::Options::threads, InRange(0, 64));
  AddIn(r,
      {"keepalive_time", "grpc.http2_keep_alive_interval",
       "idle time after which a connection is pinged", false},
      &ServerOptions::transport, &H2TransportOptions::limits,
      &H2Limits::keepalive_time, Between(absl::Seconds(1), kIntMillis));
  AddIn(r,
      {"keepalive_timeout", "grpc.http2_keep_alive_timeout",
       "a peer that does not answer a ping within this is dropped", false},
      &ServerOptions::transport, &H2TransportOptions::limits,
      &H2Limits::keepalive_timeout, Between(absl::Seconds(1), kIntMillis));
  AddIn(r,
        {"watch_min_interval", nullptr,
         "WatchFlowState pushes at most one state per this interval", false},
        &ServerOptions::watch, &WatchHub::Options::min_interval,
        Between(absl::ZeroDuration(), absl::Hours(1)));
}

// Where the election runs, and how to reach it.
void StoreRows(Rows* r) {
  Add(r,
      {"backend", "backend",
       "memory_store (standalone, always the leader), or a leader "
       "election on --store_addrs: etcd_store, postgres_store or "
       "mysql_store; empty: from --store_addrs (a postgresql:// or "
       "postgres:// URL: postgres_store, a mysql:// URL: mysql_store, "
       "anything else: etcd_store), else memory_store",
       true},
      &ServerOptions::backend,
      OneOf(
          {"", "memory_store", "etcd_store", "postgres_store", "mysql_store"}));
  Add(r,
      {"store_addrs", "store_addrs",
       "where the election runs (see --backend): etcd endpoints "
       "(host:port, comma-separated), a PostgreSQL connection string or "
       "URI, or mysql://user:password@host:port/database. Empty: "
       "standalone, always the leader",
       true},
      &ServerOptions::store_addrs);
  Add(r,
      {"store_key_prefix", "store_key_prefix",
       "prefix of this cluster's keys in the store (the election key), so "
       "that several clusters can share one etcd or database",
       true},
      &ServerOptions::store_key_prefix, KeyText);
  Add(r, {"election_name", nullptr, "name of the election", false},
      &ServerOptions::election_name, KeyText);
  Add(r,
      {"lease_ttl", nullptr,
       "lease TTL of the election (whole seconds, >= 2s); renewed every "
       "TTL/3",
       false},
      &ServerOptions::lease_ttl, [](const absl::Duration& ttl) {
        if (ttl != absl::Trunc(ttl, absl::Seconds(1))) {
          return absl::InvalidArgumentError(
              "must be whole seconds (etcd leases are in seconds)");
        }
        return Between(absl::Seconds(2), kDay)(ttl);
      });
}

// How the store is reached: TLS and credentials.
void StoreAccessRows(Rows* r) {
  Add(r,
      {"backend_tls_mode", "backend_tls.mode",
       "TLS to the store: disable, prefer, require, verify_ca or "
       "verify_full. etcd: disable/prefer are plaintext, the others TLS "
       "with etcd's certificate and name verified; PostgreSQL: libpq's "
       "sslmode (disable leaves it to --store_addrs); MySQL: see README",
       false},
      &ServerOptions::store_tls_mode,
      OneOf({"disable", "prefer", "require", "verify_ca", "verify_full"}));
  Add(r,
      {"backend_tls_ca_cert_path", "backend_tls.ca_cert_path",
       "PEM CA bundle that signed the store's certificate; empty: the "
       "system's",
       false, &SettingFiles::store_tls_ca},
      &ServerOptions::store_tls_ca);
  Add(r,
      {"backend_tls_cert_path", "backend_tls.cert_path",
       "PEM client certificate for the store (client-cert-auth)", false,
       &SettingFiles::store_tls_cert},
      &ServerOptions::store_tls_cert);
  Add(r,
      {"backend_tls_key_path", "backend_tls.key_path",
       "PEM private key of --backend_tls_cert_path", false,
       &SettingFiles::store_tls_key},
      &ServerOptions::store_tls_key);
  Add(r,
      {"store_username", nullptr,
       "etcd user (etcd authentication); empty: none", false},
      &ServerOptions::store_username);
  Add(r,
      {"store_password_file", nullptr,
       "file holding the store's password: etcd's for --store_username, or "
       "PostgreSQL's or MySQL's (over one in --store_addrs)",
       false, &SettingFiles::store_password},
      &ServerOptions::store_password_file);
}

// What one client or all of them may take.
void LimitRows(Rows* r) {
  constexpr uint64_t kNoMax = std::numeric_limits<int64_t>::max();
  Add(r,
      {"max_streams", nullptr,
       "open streams of each kind (heartbeat streams, flow-state watches, "
       "health watches); past it, a host under its fair share (the bound over "
       "the hosts holding streams) takes the longest-idle stream of the host "
       "holding the most, others get RESOURCE_EXHAUSTED (0: no limit)",
       false},
      &ServerOptions::max_streams);
  AddIn(r,
      {"max_message_bytes", nullptr,
       "largest request accepted, also once a zstd request is inflated (our "
       "own bound: GreptimeDB's grpc.max_recv_message_size, 512 MB upstream, "
       "is not read)",
       false},
      &ServerOptions::transport, &H2TransportOptions::limits,
      &H2Limits::max_message_bytes, InRange(1, std::numeric_limits<int>::max()));
  AddIn(r,
        {"max_flows_per_report", nullptr,
         "a report of more flows ends its stream with INVALID_ARGUMENT", false},
        &ServerOptions::heartbeat,
        &HeartbeatHandler::Options::max_flows_per_report);
  AddIn(r,
        {"max_nodes", nullptr,
         "nodes known at once, per role: flownodes (record and report), "
         "and apart the cluster-info keys of frontends, of datanodes and "
         "of flownodes; a heartbeat adding one past it is refused with "
         "RESOURCE_EXHAUSTED (0: no limit)",
         false},
        &ServerOptions::flow_state, &core::FlowStateLimits::max_nodes);
  AddIn(r,
        {"max_total_flows", nullptr,
         "(node, flow) entries summed over every flownode's latest report; "
         "a report that would pass it is refused with RESOURCE_EXHAUSTED "
         "(0: no limit)",
         false},
        &ServerOptions::flow_state, &core::FlowStateLimits::max_total_flows);
  AddIn(r,
      {"max_streams_per_connection", nullptr,
       "HTTP/2 streams (calls of any kind) one connection may have open",
       false},
      &ServerOptions::transport, &H2TransportOptions::limits,
      &H2Limits::max_concurrent_streams,
      InRange(1, std::numeric_limits<int>::max()));
  AddIn(r,
        {"max_reply_bytes_in_flight", nullptr,
         "bytes of answers sent but not yet read by clients; past it, new "
         "answers get RESOURCE_EXHAUSTED (0: no limit)",
         false},
        &ServerOptions::door, &DoorOptions::max_reply_bytes_in_flight);
  AddIn(r,
      {"transport_threads", nullptr,
       "threads that run the gRPC port's connections (an epoll loop each; "
       "0: one per core)",
       false},
      &ServerOptions::transport, &H2TransportOptions::threads,
      InRange(0, 256));
  AddIn(r,
      {"grpc_memory_limit", nullptr,
       "request bytes the gRPC port may hold before their messages are "
       "whole, over every connection, shared by host (a host under its fair "
       "share still takes at the bound); a call whose bytes its host may not "
       "take ends RESOURCE_EXHAUSTED (0: none, else at least 16 MiB)",
       false},
      &ServerOptions::transport, &H2TransportOptions::limits,
      &H2Limits::max_held_requests, [](const uint64_t& n) {
        return n == 0 || n >= (16 << 20)
                   ? absl::OkStatus()
                   : absl::InvalidArgumentError("must be 0 or at least 16 MiB");
      });
  AddIn(
      r,
      {"max_calls", nullptr,
       "calls of any kind (heartbeat streams included) open at once, each "
       "charged from its first HEADERS frame; past it, a host under its fair "
       "share (the bound over the hosts holding calls) takes the longest-idle "
       "stream of the host holding the most, others get RESOURCE_EXHAUSTED "
       "(0: --grpc_memory_limit / 20 KiB; no limit "
       "if that is 0 too; --print_config shows the value in force)",
       false},
      &ServerOptions::door, &DoorOptions::peers, &PeerLimits::max_calls);
  AddIn(r,
        {"max_calls_per_peer", nullptr,
         "a fixed cap on calls open at once from one client host (every "
         "connection from one IP address), beside the fair share that "
         "--max_calls applies; more get RESOURCE_EXHAUSTED (0: none)",
         false},
        &ServerOptions::door, &DoorOptions::peers,
        &PeerLimits::max_calls_per_peer);
  AddIn(r,
        {"max_reply_bytes_per_peer", nullptr,
         "bytes of answers one client host may hold unread: its share of "
         "--max_reply_bytes_in_flight; past it, its new answers get "
         "RESOURCE_EXHAUSTED (0: a quarter of --max_reply_bytes_in_flight)",
         false},
        &ServerOptions::door, &DoorOptions::peers,
        &PeerLimits::max_reply_bytes_per_peer);
  AddIn(r,
        {"peer_ipv4_prefix", nullptr,
         "IPv4 clients count as one host per prefix of this many bits in "
         "every fair share and back-off (32: each address; fewer groups a "
         "range one party holds); IPv6 clients count per /64, what one "
         "machine is given",
         false},
        &ServerOptions::door, &DoorOptions::peers,
        &PeerLimits::ipv4_prefix_bits, InRange(8, 32));
  AddIn(r,
        {"request_timeout", nullptr,
         "a unary call whose request has not arrived this long after its "
         "headers is cancelled (half-open calls hold no memory)",
         false},
        &ServerOptions::door, &DoorOptions::request_timeout,
        Between(absl::Milliseconds(100), kDay));
  AddIn(r,
        {"max_early_resets", nullptr,
         "RST_STREAM frames a connection may send, as a burst and then each "
         "second, before nghttp2 closes it (a rapid reset; 0: nghttp2's "
         "1,000 and 33); a client host may cause twice that of the server's "
         "resets for stream errors over all its connections, then it is cut "
         "and slowed 1 s",
         false},
        &ServerOptions::transport, &H2TransportOptions::limits,
        &H2Limits::max_early_resets, InRange<int>(0, 1 << 20));
  AddIn(r,
        {"heartbeat_silence_limit", nullptr,
         "the least silence that ends a heartbeat stream, a floor under its "
         "own limit: 3 x the interval its handshake answer told it (a "
         "frontend 6 x --heartbeat_interval, other nodes 1 x) + "
         "--retry_interval; before its handshake, --request_timeout "
         "(--print_config shows the limits in force)",
         false},
        &ServerOptions::door, &DoorOptions::heartbeat_silence_limit,
        Between(absl::ZeroDuration(), kDay));
  AddIn(r,
        {"reply_stall_limit", nullptr,
         "an answer (a unary answer, a stream's message, a status) not "
         "wholly written to its connection this long, plus its size at "
         "1 MiB/s, from when it could start ends its call with "
         "RESOURCE_EXHAUSTED, however the client trickles its window, "
         "giving back its slot and its reply budget: its client is not "
         "reading",
         false},
        &ServerOptions::door, &DoorOptions::reply_stall_limit,
        Between(absl::Milliseconds(100), kDay));
  AddIn(r,
        {"max_queued_reads", nullptr,
         "large reads waiting for a read thread; more get "
         "RESOURCE_EXHAUSTED",
         false},
        &ServerOptions::reads, &ReadExecutor::Options::max_queued_large,
        InRange<size_t>(1, kNoMax));
}

// Node expiry and the alerting series.
void OpsRows(Rows* r) {
  AddIn(r,
        {"node_report_ttl", nullptr,
         "a flownode silent for longer loses its report and its flows leave "
         "the aggregate; 0 (default): never, as GreptimeDB's metasrv",
         false},
        &ServerOptions::flow_state, &core::FlowStateLimits::node_report_ttl,
        Between(absl::ZeroDuration(), kTenYears));
  AddIn(r,
        {"node_max_idle_time", "node_max_idle_time",
         "a node silent for longer leaves the cluster info "
         "(__meta_cluster_node_info keys) and ListFlownodes; its flow state "
         "stays (GreptimeDB's node_max_idle_time); 0: never",
         false},
        &ServerOptions::flow_state, &core::FlowStateLimits::node_max_idle_time,
        Between(absl::ZeroDuration(), kTenYears));
  AddIn(r,
        {"metrics_top_flows", nullptr,
         "per-flow alerting series (metasrv_flow_state_bytes, "
         "metasrv_flow_exec_lag_seconds) for this many flows each: the "
         "largest and the most lagging; 0: none",
         false},
        &ServerOptions::flow_alerts, &FlowAlertOptions::top_flows,
        InRange<uint64_t>(0, 1000));
  AddIn(r,
        {"flow_stall_after", nullptr,
         "a flow whose last execution is older than this is stalled "
         "(metasrv_flows_stalled)",
         false},
        &ServerOptions::flow_alerts, &FlowAlertOptions::stall_after,
        Between(absl::Milliseconds(1), kTenYears));
  AddIn(r,
        {"flownode_silent_after", nullptr,
         "a flownode not heard from for longer is silent "
         "(metasrv_flownodes_silent)",
         false},
        &ServerOptions::flow_alerts, &FlowAlertOptions::silent_after,
        Between(absl::Milliseconds(1), kTenYears));
}

// The log: level, format, files.
void LogRows(Rows* r) {
  Add(r,
      {"log_level", "logging.level", "trace, debug, info, warn, error or off",
       true},
      &ServerOptions::log_level,
      OneOf({"trace", "debug", "info", "warn", "error", "off"}));
  Add(r,
      {"log_format", "logging.log_format",
       "text (one line per record, UTC RFC 3339 time) or json (one JSON "
       "object per line)",
       true},
      &ServerOptions::log_format, OneOf({"text", "json"}));
  Add(r,
      {"log_dir", "logging.dir",
       "also write the log to files in this folder (created if missing): a "
       "new file every hour, metasrv_YYYY-MM-DD_HH.log; empty: stderr only",
       false},
      &ServerOptions::log_dir, [](const std::string& dir) {
        // An existing path must be a folder; whether it can be written is
        // found when the files are opened (exit 2 then too).
        struct stat st {};
        if (!dir.empty() && stat(dir.c_str(), &st) == 0 &&
            !S_ISDIR(st.st_mode)) {
          return absl::InvalidArgumentError("is not a folder");
        }
        return absl::OkStatus();
      });
  Add(r,
      {"log_max_files", "logging.max_log_files",
       "hourly log files kept in --log_dir, the newest ones", false},
      &ServerOptions::log_max_files, InRange<uint64_t>(1, 65535));
}

}  // namespace

const std::vector<std::unique_ptr<Setting>>& Settings() {
  static const Rows* const rows = [] {
    auto* all = new Rows;
    ServingRows(all);
    ClientRows(all);
    StoreRows(all);
    StoreAccessRows(all);
    LimitRows(all);
    OpsRows(all);
    LogRows(all);
    return all;
  }();
  return *rows;
}

const Setting* FindSetting(absl::string_view name) {
  for (const std::unique_ptr<Setting>& setting : Settings()) {
    if (name == setting->name()) return setting.get();
  }
  return nullptr;
}

const Setting* FindSettingByKey(absl::string_view key) {
  for (const std::unique_ptr<Setting>& setting : Settings()) {
    if (key == setting->key()) return setting.get();
  }
  return key.find('.') == absl::string_view::npos ? FindSetting(key) : nullptr;
}

}  // namespace metasrv::server
