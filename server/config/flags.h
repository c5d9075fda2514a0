// Command-line flags of the metasrv binary. Their values can also come from
// a TOML config file and the environment (config_file.h); `--flagfile=FILE`
// reads flags from a file, one `--name=value` per line.
#ifndef METASRV_SERVER_CONFIG_FLAGS_H_
#define METASRV_SERVER_CONFIG_FLAGS_H_

#include "absl/flags/commandlineflag.h"
#include "absl/status/statusor.h"
#include "server/config/server_options.h"

namespace metasrv::server {

// ServerOptions from the parsed flags; kInvalidArgument for bad values.
absl::StatusOr<ServerOptions> OptionsFromFlags();

// Sets up logging from --log_level and --log_format (logging.h);
// kInvalidArgument for an unknown level or format.
absl::Status ApplyLoggingFlags();

// Whether `flag` is one of this file's flags (not one of a library's).
bool IsServerFlag(const absl::CommandLineFlag& flag);

// --config_file and --print_config.
std::string ConfigFileFlag();
bool PrintConfigFlag();

}  // namespace metasrv::server

#endif  // METASRV_SERVER_CONFIG_FLAGS_H_
