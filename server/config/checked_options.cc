#include "server/config/checked_options.h"

#include <libpq-fe.h>

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/config/settings.h"
#include "server/ops/admin_auth.h"
#include "server/ops/net_util.h"
#include "server/ops/small_file.h"
#include "server/ops/store_address.h"
#include "server/ops/tls_identity.h"
#include "server/services/heartbeat_handler.h"

namespace metasrv::server {
namespace {

// The longest store key prefix with election name: MySQL's key column holds
// 512 bytes, with "/candidate/" and the holder after it.
constexpr size_t kMaxElectionKey = 200;

// The backend named, or decided from the addresses.
absl::Status DecideBackend(ServerOptions* o) {
  o->store_addrs.erase(
      std::remove(o->store_addrs.begin(), o->store_addrs.end(), ""),
      o->store_addrs.end());
  if (o->backend.empty()) {
    // The store's kind from its address when it says: a PostgreSQL URL or
    // a mysql:// URL names its backend; anything else is etcd.
    const std::string first = o->store_addrs.empty() ? "" : o->store_addrs[0];
    if (o->store_addrs.empty()) {
      o->backend = "memory_store";
    } else if (absl::StartsWith(first, "postgresql://") ||
               absl::StartsWith(first, "postgres://")) {
      o->backend = "postgres_store";
    } else if (absl::StartsWith(first, "mysql://")) {
      o->backend = "mysql_store";
    } else {
      o->backend = "etcd_store";
    }
  }
  if (o->backend == "memory_store") {
    o->store_addrs.clear();
  } else if (o->store_addrs.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--backend=", o->backend,
        " needs --store_addrs (etcd endpoints, a PostgreSQL connection "
        "string or a mysql:// URL)"));
  }
  return absl::OkStatus();
}

// The addresses are in the form the backend takes: a store that cannot be
// reached as written is refused now, not waited for.
absl::Status CheckStoreAddresses(const ServerOptions& o) {
  if (o.backend == "etcd_store") {
    for (const std::string& addr : o.store_addrs) {
      std::string host;
      int port = 0;
      absl::Status split = SplitHostPort(addr, &host, &port);
      if (!split.ok() || port == 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--store_addrs: '", addr,
            "' is not an etcd endpoint (host:port, such as 127.0.0.1:2379)"));
      }
    }
  }
  const std::string joined = absl::StrJoin(o.store_addrs, ",");
  if (o.backend == "postgres_store") {
    char* error = nullptr;
    PQconninfoOption* parsed = PQconninfoParse(joined.c_str(), &error);
    const std::string why = error != nullptr ? error : "out of memory";
    PQfreemem(error);
    if (parsed == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--store_addrs is not a PostgreSQL connection string (host=... "
          "port=... dbname=...) or URI (postgresql://user@host:5432/db): ",
          absl::StripTrailingAsciiWhitespace(why)));
    }
    PQconninfoFree(parsed);
  }
  if (o.backend == "mysql_store") {
    absl::StatusOr<MysqlAddress> parsed = ParseMysqlAddress(joined);
    if (!parsed.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--store_addrs: ", parsed.status().message()));
    }
  }
  return absl::OkStatus();
}

// The rules that tie settings together.
absl::Status CheckTogether(const ServerOptions& o) {
  if (o.tls_cert.empty() != o.tls_key.empty()) {
    return absl::InvalidArgumentError("--tls_cert and --tls_key go together");
  }
  if (!o.tls_client_ca.empty() && o.tls_cert.empty()) {
    return absl::InvalidArgumentError(
        "--tls_client_ca needs --tls_cert and --tls_key");
  }
  if (o.store_tls_cert.empty() != o.store_tls_key.empty()) {
    return absl::InvalidArgumentError(
        "--backend_tls_cert_path and --backend_tls_key_path go together");
  }
  if (!o.store_username.empty() && o.store_password_file.empty()) {
    return absl::InvalidArgumentError(
        "--store_username needs --store_password_file");
  }
  if (o.backend == "etcd_store" && o.store_username.empty() &&
      !o.store_password_file.empty()) {
    return absl::InvalidArgumentError(
        "--store_password_file on etcd needs --store_username");
  }
  if (o.backend == "memory_store" && !o.store_password_file.empty()) {
    return absl::InvalidArgumentError(
        "--store_password_file needs a store (--store_addrs)");
  }
  if (!o.store_username.empty() && o.backend != "etcd_store") {
    return absl::InvalidArgumentError(
        absl::StrCat("--store_username is for etcd; ", o.backend,
                     " takes the user in --store_addrs (and the password "
                     "there or in --store_password_file)"));
  }
  const size_t key = o.store_key_prefix.size() + o.election_name.size();
  if (key > kMaxElectionKey) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--store_key_prefix and --election_name together must be at most ",
        kMaxElectionKey, " bytes (", key, " given)"));
  }
  return absl::OkStatus();
}

// Reads every file a setting names into `files`.
absl::Status ReadFiles(const ServerOptions& o, SettingFiles* files) {
  for (const std::unique_ptr<Setting>& setting : Settings()) {
    if (setting->file() == nullptr) continue;
    const std::string path = SettingText(setting->Get(o));
    if (path.empty()) continue;
    const std::string flag = absl::StrCat("--", setting->name());
    absl::StatusOr<std::string> read = ReadSmallFile(path, flag.c_str());
    if (!read.ok()) return read.status();
    files->*setting->file() = *std::move(read);
  }
  if (!o.tls_cert.empty()) {
    // A certificate with another pair's key would fail every handshake.
    absl::Status pair = CheckTlsIdentity(
        {files->tls_cert, files->tls_key, files->tls_client_ca},
        {o.tls_cert, o.tls_key, o.tls_client_ca});
    if (!pair.ok()) return pair;
  }
  files->store_password =
      std::string(absl::StripTrailingAsciiWhitespace(files->store_password));
  if (!o.admin_token_file.empty()) {
    absl::StatusOr<AdminAuth> token =
        AdminAuth::FromToken(files->admin_token, o.admin_token_file);
    if (!token.ok()) return token.status();
    files->admin_token =
        std::string(absl::StripAsciiWhitespace(files->admin_token));
  }
  return absl::OkStatus();
}

// What one open call costs gRPC, about: 15.7 KiB measured for a unary call
// waiting for its request, 17.2 KiB for a heartbeat stream
// (docs/RELIABILITY.md), rounded up. --max_calls' default is sized by it.
constexpr uint64_t kCallBytes = 20 << 10;

// Every value the settings leave to a rule, decided: what is in force.
void Resolve(ServerOptions* o) {
  PeerLimits& peers = o->door.peers;
  if (peers.max_calls == 0) peers.max_calls = o->transport.limits.max_held_requests / kCallBytes;
  if (peers.max_reply_bytes_per_peer == 0) {
    peers.max_reply_bytes_per_peer = o->door.max_reply_bytes_in_flight / 4;
  }
  // --max_streams bounds each kind of stream.
  for (CallKind kind :
       {CallKind::kHeartbeat, CallKind::kWatch, CallKind::kHealthWatch}) {
    peers.max_open[static_cast<int>(kind)] = o->max_streams;
  }
  // Each heartbeat stream's silence limit follows what its handshake told
  // it (CallDoor::SilenceLimitFor); the sweep looks often enough for the
  // shortest: a flownode's, or a stream's before its handshake.
  const absl::Duration shortest = std::min(
      o->door.request_timeout, std::max(3 * o->heartbeat.heartbeat_interval +
                                            o->heartbeat.retry_interval,
                                        o->door.heartbeat_silence_limit));
  // A flownode that reported within its stream's silence limit is live:
  // never forgotten at --max_nodes for a new one.
  o->flow_state.live_report_window = SilenceLimit(
      o->door, o->heartbeat.heartbeat_interval, o->heartbeat.retry_interval);
  o->door.sweep_period =
      std::clamp(shortest / 4, absl::Milliseconds(10), absl::Seconds(1));
  // GreptimeDB's node_max_idle_time as upstream applies it: its node expiry
  // listener is registered only when there is an election
  // (src/meta-srv/src/metasrv.rs, Metasrv::try_start), so standalone never
  // expires idle nodes.
  if (o->backend == "memory_store") {
    o->flow_state.node_max_idle_time = absl::ZeroDuration();
  }
}

// The silence a stream told `interval` may keep.
absl::Duration Told(const ServerOptions& o, absl::Duration interval) {
  return SilenceLimit(o.door, interval, o.heartbeat.retry_interval);
}

// Expiries shorter than the silence a node at upstream's cadence may keep:
// they work, and drop honest nodes.
std::vector<std::string> Cautions(const ServerOptions& o) {
  std::vector<std::string> out;
  const absl::Duration flownode = Told(o, o.heartbeat.heartbeat_interval);
  const absl::Duration frontend =
      Told(o, o.heartbeat.heartbeat_interval * kFrontendIntervalFactor);
  const absl::Duration ttl = o.flow_state.node_report_ttl;
  if (ttl > absl::ZeroDuration() && ttl < flownode) {
    out.push_back(
        absl::StrCat("--node_report_ttl=", absl::FormatDuration(ttl),
                     " is shorter than a flownode's heartbeat silence limit (",
                     absl::FormatDuration(flownode),
                     "): a flownode one heartbeat late loses its flows"));
  }
  const absl::Duration idle = o.flow_state.node_max_idle_time;
  if (idle > absl::ZeroDuration() && idle < frontend) {
    out.push_back(absl::StrCat(
        "--node_max_idle_time=", absl::FormatDuration(idle),
        " is shorter than a frontend's heartbeat silence limit (",
        absl::FormatDuration(frontend),
        "): frontends heartbeating at their told interval leave the cluster "
        "info between heartbeats"));
  }
  return out;
}

}  // namespace

std::string SilenceRules(const ServerOptions& o) {
  const absl::Duration interval = o.heartbeat.heartbeat_interval;
  return absl::StrCat(
      "# heartbeat streams end when silent past 3 x the interval told + "
      "retry_interval, at least heartbeat_silence_limit: flownodes and "
      "datanodes (told ",
      absl::FormatDuration(interval), ") ",
      absl::FormatDuration(Told(o, interval)), ", frontends (told ",
      absl::FormatDuration(interval * kFrontendIntervalFactor), ") ",
      absl::FormatDuration(Told(o, interval * kFrontendIntervalFactor)),
      "; before the handshake, request_timeout (",
      absl::FormatDuration(o.door.request_timeout), ")\n");
}

absl::StatusOr<CheckedOptions> CheckOptions(ServerOptions options) {
  for (const std::unique_ptr<Setting>& setting : Settings()) {
    if (absl::Status checked = setting->Check(options); !checked.ok()) {
      return checked;
    }
  }
  if (absl::Status decided = DecideBackend(&options); !decided.ok()) {
    return decided;
  }
  if (absl::Status form = CheckStoreAddresses(options); !form.ok()) {
    return form;
  }
  if (absl::Status together = CheckTogether(options); !together.ok()) {
    return together;
  }
  CheckedOptions checked;
  if (absl::Status read = ReadFiles(options, &checked.files_); !read.ok()) {
    return read;
  }
  Resolve(&options);
  checked.cautions_ = Cautions(options);
  checked.options_ = std::move(options);
  return checked;
}

}  // namespace metasrv::server
