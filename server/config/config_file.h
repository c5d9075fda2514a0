// GreptimeDB-style configuration: a TOML file (`--config_file`, `-c`) and
// GREPTIMEDB_METASRV__* environment variables, as values for the settings
// (settings.h).
//
// A setting GreptimeDB's metasrv has with the same meaning is read under its
// key (config/metasrv.example.toml in GreptimeTeam/greptimedb): `store_addrs`,
// `backend`, `store_key_prefix`, `heartbeat_interval`, `node_max_idle_time`,
// `[grpc] bind_addr / server_addr / max_recv_message_size`, `[http] addr`,
// `[logging] level / log_format`, `[backend_tls] mode / ca_cert_path /
// cert_path / key_path`; every setting is also a top-level key of its own
// name (`max_streams = 50000`). GreptimeDB keys with no meaning here
// (`selector`, `[wal]`, ...) are accepted and reported; unknown keys are
// reported as such. A value of the wrong type is an error naming the key.
//
// Environment variables follow GreptimeDB's layout (src/common/config/src/
// config.rs): the prefix, then the key path with `__` between levels, in
// upper case; lists are comma-separated: GREPTIMEDB_METASRV__GRPC__BIND_ADDR,
// GREPTIMEDB_METASRV__STORE_ADDRS=a:2379,b:2379,
// GREPTIMEDB_METASRV__MAX_STREAMS.
//
// Precedence (this service's, as its operators asked; GreptimeDB's own is
// file over environment): the command line (and --flagfile) > environment
// > file > defaults.
#ifndef METASRV_SERVER_CONFIG_CONFIG_FILE_H_
#define METASRV_SERVER_CONFIG_CONFIG_FILE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/config/server_options.h"
#include "server/config/setting.h"

namespace metasrv::server {

// One value for one setting, and where it came from.
struct ConfigAssignment {
  const Setting* setting;  // The row it sets; borrowed from Settings().
  SettingInput input;      // The value, as found.
  std::string source;      // "FILE: key" or "environment NAME".
};

// What a config source says.
struct ConfigValues {
  std::vector<ConfigAssignment> assignments;  // In the order met.
  std::vector<std::string> notes;          // Keys ignored, and why, one each.
  std::vector<std::string> unknown_keys;   // Keys neither ours nor upstream's.
  std::vector<std::string> greptime_keys;  // Upstream's, meaningless here.
};

// `text` with the password of a URL's user (scheme://user:***@host) and
// every `password=` value (libpq's form, a URI's query) replaced by ***.
std::string MaskPasswords(absl::string_view text);

// One line for all ignored keys of `sources` ("2 unknown key(s) ignored:
// a, b; 31 GreptimeDB metasrv key(s) ..."); empty when none was.
std::string IgnoredKeysSummary(const std::vector<ConfigValues>& sources);

inline constexpr char kEnvPrefix[] = "GREPTIMEDB_METASRV__";

// Reads the TOML file at `path`. kInvalidArgument for a syntax error (with
// line and column), a value of the wrong type (naming the key) or two keys
// of one setting that disagree; kNotFound if the file cannot be read.
absl::StatusOr<ConfigValues> LoadConfigFile(const std::string& path);

// Reads the variables of `env` ("NAME=value" entries, as `environ`) that
// start with kEnvPrefix; empty ones are skipped, as GreptimeDB does.
// kInvalidArgument naming the variable for a bad value.
absl::StatusOr<ConfigValues> LoadConfigEnv(const std::vector<std::string>& env);

// Sets each assignment's setting in `options`, in order.
absl::Status ApplyAssignments(const std::vector<ConfigAssignment>& assignments,
                              ServerOptions* options);

// `options` as a TOML file this service reads back (every setting, under
// GreptimeDB's names and sections where they exist), every password in a
// store address masked (MaskPasswords).
std::string EffectiveConfigToml(const ServerOptions& options);

}  // namespace metasrv::server

#endif  // METASRV_SERVER_CONFIG_CONFIG_FILE_H_
