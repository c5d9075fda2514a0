// The table of the server's settings: one row each, in settings.cc.
//
// Adding a setting is its member in server_options.h, its row in
// settings.cc, and its use; the command line, the TOML file, the environment,
// --help, --print_config and the README's table (tested) follow from the row.
#ifndef METASRV_SERVER_CONFIG_SETTINGS_H_
#define METASRV_SERVER_CONFIG_SETTINGS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/config/server_options.h"
#include "server/config/setting.h"

namespace metasrv::server {

// Every setting, in the table's order. Built once; thread-safe.
const std::vector<std::unique_ptr<Setting>>& Settings();

// The setting named --`name`; null if there is none.
const Setting* FindSetting(absl::string_view name);
// The setting a config-file key (dotted, "grpc.bind_addr") or environment
// key sets: its GreptimeDB key, or its own name at the top level; null if
// none.
const Setting* FindSettingByKey(absl::string_view key);

}  // namespace metasrv::server

#endif  // METASRV_SERVER_CONFIG_SETTINGS_H_
