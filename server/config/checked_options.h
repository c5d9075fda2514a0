// The one check of a whole configuration, and what passes it.
#ifndef METASRV_SERVER_CONFIG_CHECKED_OPTIONS_H_
#define METASRV_SERVER_CONFIG_CHECKED_OPTIONS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/config/server_options.h"

namespace metasrv::server {

// Options that passed every check, with the files they name read: the only
// kind MetasrvServer starts from.
class CheckedOptions {
 public:
  const ServerOptions& options() const { return options_; }
  const SettingFiles& files() const { return files_; }
  // Settings that work but that a node doing exactly what upstream's
  // client does would suffer from (an expiry shorter than the silence its
  // told interval allows): one line each, for the log and --print_config.
  const std::vector<std::string>& cautions() const { return cautions_; }

 private:
  friend absl::StatusOr<CheckedOptions> CheckOptions(ServerOptions options);

  CheckedOptions() = default;

  ServerOptions options_;  // As checked, the backend decided.
  SettingFiles files_;     // What the named files hold.
  std::vector<std::string> cautions_;
};

// Checks `options` whole: each setting's own check, then the rules that tie
// settings together (TLS cert with key, a store backend with its addresses,
// a store user with a password file, the election key's size); then reads
// every file a setting names, once. An empty backend becomes etcd_store
// (with store_addrs) or memory_store; memory_store drops store_addrs. Then
// every value left to a rule is decided, so that the options hold what is
// in force (and --print_config prints it): a door bound left 0 from the
// budgets, the watch streams' bound from --max_streams, and
// node_max_idle_time zero without an election (as upstream, which expires
// idle nodes only where there is one).
// kInvalidArgument naming the setting for anything that cannot work.
absl::StatusOr<CheckedOptions> CheckOptions(ServerOptions options);

// The heartbeat silence limits `options` put in force, by role, as one
// TOML comment line (--print_config).
std::string SilenceRules(const ServerOptions& options);

}  // namespace metasrv::server

#endif  // METASRV_SERVER_CONFIG_CHECKED_OPTIONS_H_
