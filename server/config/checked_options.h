// The one check of a whole configuration, and what passes it.
#ifndef METASRV_SERVER_CONFIG_CHECKED_OPTIONS_H_
#define METASRV_SERVER_CONFIG_CHECKED_OPTIONS_H_

#include "absl/status/statusor.h"
#include "server/config/server_options.h"

namespace metasrv::server {

// Options that passed every check, with the files they name read: the only
// kind MetasrvServer starts from.
class CheckedOptions {
 public:
  const ServerOptions& options() const { return options_; }
  const SettingFiles& files() const { return files_; }

 private:
  friend absl::StatusOr<CheckedOptions> CheckOptions(ServerOptions options);

  CheckedOptions() = default;

  ServerOptions options_;  // As checked, the backend decided.
  SettingFiles files_;     // What the named files hold.
};

// Checks `options` whole: each setting's own check, then the rules that tie
// settings together (TLS cert with key, a store backend with its addresses,
// a store user with a password file, the election key's size); then reads
// every file a setting names, once. An empty backend becomes etcd_store
// (with store_addrs) or memory_store; memory_store drops store_addrs.
// kInvalidArgument naming the setting for anything that cannot work.
absl::StatusOr<CheckedOptions> CheckOptions(ServerOptions options);

// GreptimeDB's node_max_idle_time as upstream applies it: its node expiry
// listener is registered only when there is an election
// (src/meta-srv/src/metasrv.rs, Metasrv::try_start), so with memory_store
// (standalone, no election) idle nodes are never expired: zero then.
absl::Duration EffectiveNodeMaxIdleTime(const ServerOptions& options);
// options.flow_state, its node_max_idle_time as EffectiveNodeMaxIdleTime().
core::FlowStateLimits EffectiveFlowStateLimits(const ServerOptions& options);

}  // namespace metasrv::server

#endif  // METASRV_SERVER_CONFIG_CHECKED_OPTIONS_H_
