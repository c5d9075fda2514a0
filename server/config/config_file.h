// GreptimeDB-style configuration: a TOML file (`--config_file`, `-c`) and
// GREPTIMEDB_METASRV__* environment variables, turned into flag values.
//
// Keys that GreptimeDB's metasrv has with the same meaning use its names
// (config/metasrv.example.toml in GreptimeTeam/greptimedb): `store_addrs`,
// `backend`, `store_key_prefix`, `heartbeat_interval`, `node_max_idle_time`,
// `[grpc] bind_addr / server_addr / max_recv_message_size`, `[http] addr`,
// `[logging] level / log_format`, `[backend_tls] mode / ca_cert_path /
// cert_path / key_path`. Every other flag of this service is a
// top-level key of its own name (`max_streams = 50000`). GreptimeDB keys with
// no meaning here (`selector`, `[wal]`, ...) are accepted and reported;
// unknown keys are reported as such. A value of the wrong type is an error
// naming the key.
//
// Environment variables follow GreptimeDB's layout (src/common/config/src/
// config.rs): the prefix, then the key path with `__` between levels, in
// upper case; lists are comma-separated: GREPTIMEDB_METASRV__GRPC__BIND_ADDR,
// GREPTIMEDB_METASRV__STORE_ADDRS=a:2379,b:2379,
// GREPTIMEDB_METASRV__MAX_STREAMS.
//
// Precedence (this service's, as its operators asked; GreptimeDB's own is
// file over environment): command-line flags (and --flagfile) > environment
// > file > defaults.
#ifndef METASRV_SERVER_CONFIG_CONFIG_FILE_H_
#define METASRV_SERVER_CONFIG_CONFIG_FILE_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace metasrv::server {

// The largest config file or flag file read.
inline constexpr int64_t kMaxConfigBytes = 1 << 20;

// OK if `path` names a regular file of at most kMaxConfigBytes; else
// kInvalidArgument (empty path, a directory, a device such as /dev/zero, too
// large) or kNotFound, naming `what` and the path.
absl::Status CheckReadableConfig(const std::string& path, const char* what);

// One flag to set, and where the value came from.
struct FlagAssignment {
  std::string flag;    // The flag's name (without dashes).
  std::string value;   // The value, as the flag's own parser reads it.
  std::string source;  // "FILE: key" or "environment NAME", for messages.
};

// What a config source says.
struct ConfigValues {
  std::vector<FlagAssignment> assignments;  // In the order met.
  std::vector<std::string> notes;  // Keys ignored, and why; for the log.
};

inline constexpr char kEnvPrefix[] = "GREPTIMEDB_METASRV__";

// Reads the TOML file at `path`. kInvalidArgument for a syntax error (with
// line and column), a value of the wrong type or out of range (naming the
// key); kNotFound if the file cannot be read.
absl::StatusOr<ConfigValues> LoadConfigFile(const std::string& path);

// Reads the variables of `env` ("NAME=value" entries, as `environ`) that
// start with kEnvPrefix. kInvalidArgument naming the variable for a bad
// value.
absl::StatusOr<ConfigValues> LoadConfigEnv(const std::vector<std::string>& env);

// Sets each flag; kInvalidArgument naming the source if a flag rejects its
// value.
absl::Status ApplyAssignments(const std::vector<FlagAssignment>& assignments);

// The flags' current values as a TOML file this service reads back
// (GreptimeDB's names and sections where they exist).
std::string EffectiveConfigToml();

// "3s", "500ms", "24hours", "1h 30m", "10m": GreptimeDB's (humantime)
// durations. kInvalidArgument otherwise.
absl::StatusOr<absl::Duration> ParseHumanDuration(const std::string& text);
// "512MB", "64KiB", "4194304", "0.5GB": GreptimeDB's sizes, in binary units
// (KB = KiB = 1024; src/common/base/src/readable_size.rs). kInvalidArgument
// otherwise.
absl::StatusOr<uint64_t> ParseReadableSize(const std::string& text);

}  // namespace metasrv::server

#endif  // METASRV_SERVER_CONFIG_CONFIG_FILE_H_
