// The metasrv binary's command line: --help, --version, `-c FILE`,
// --flagfile, --print_config, --check_config, and every setting as
// `--name=value` (or
// `--name value`). Sources fill one ServerOptions, lowest first: defaults,
// the config file, the environment (config_file.h), the command line.
#ifndef METASRV_SERVER_CONFIG_COMMAND_LINE_H_
#define METASRV_SERVER_CONFIG_COMMAND_LINE_H_

#include <string>
#include <vector>

#include "server/config/server_options.h"

namespace metasrv::server {

// Exit codes of the binary.
inline constexpr int kExitOk = 0;       // Served and stopped, or --help.
inline constexpr int kExitRuntime = 1;  // Could not start or serve.
inline constexpr int kExitUsage = 2;    // Bad arguments, settings or config.

// What the command line asked for.
struct CommandLine {
  // An exit code to end with at once (after --help, --version,
  // --print_config, --check_config or an error, which has been printed); -1
  // to go on.
  int exit_code = -1;
  // One line naming the config keys ignored, to log once logging is set up;
  // empty when none was.
  std::string ignored_keys;
  // Keys of the file or environment that neither this service nor
  // GreptimeDB knows (a misspelling, most often): --check_config fails on
  // them; a start logs them.
  std::vector<std::string> unknown_keys;
  // Values one source gave that a later one replaced ("metrics_addr: FILE:
  // http.addr is overridden by environment NAME"), to log once logging is
  // set up.
  std::vector<std::string> overridden;
  // Every source applied; not checked yet (CheckOptions, checked_options.h).
  ServerOptions options;
};

// Reads argv (and `env`, as `environ`) into options. Prints help, version,
// the effective config and errors itself: as JSON log lines when the
// arguments, the environment or the file ask for JSON logs, or when
// `json_logs` (a reload: the running server's log format).
CommandLine ReadCommandLine(int argc, char** argv,
                            const std::vector<std::string>& env,
                            bool json_logs = false);

// "metasrv 0.1.0 (commit abc1234, Release build)".
std::string VersionLine();

}  // namespace metasrv::server

#endif  // METASRV_SERVER_CONFIG_COMMAND_LINE_H_
