// Command-line flags of the metasrv binary. `--flagfile=FILE` reads flags
// from a file, one `--name=value` per line: that is the config file.
#ifndef METASRV_SERVER_OPS_FLAGS_H_
#define METASRV_SERVER_OPS_FLAGS_H_

#include "absl/status/statusor.h"
#include "server/metasrv_server.h"

namespace metasrv::server {

// ServerOptions from the parsed flags; kInvalidArgument for bad values.
absl::StatusOr<ServerOptions> OptionsFromFlags();

// Sets spdlog's level from --log_level; kInvalidArgument for an unknown one.
absl::Status ApplyLogLevelFlag();

}  // namespace metasrv::server

#endif  // METASRV_SERVER_OPS_FLAGS_H_
