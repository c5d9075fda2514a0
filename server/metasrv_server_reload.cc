// MetasrvServer::Reload(): what SIGHUP re-reads and when each change
// applies (split from metasrv_server.cc by role).
#include <memory>
#include <string>
#include <vector>

#include "server/config/settings.h"
#include "server/metasrv_server.h"
#include "server/ops/admin_auth.h"
#include "server/ops/logging.h"
#include "spdlog/spdlog.h"

namespace metasrv::server {

namespace {

// Logs, for each file the settings name that changed, when the change
// applies. `sql`: the store is PostgreSQL or MySQL.
// `refresh_seconds`: how often gRPC re-reads its TLS files.
void LogFileChanges(const SettingFiles& before, const SettingFiles& now,
                    bool sql, unsigned int refresh_seconds) {
  // Every file: what its change means. gRPC watches its TLS files; the SQL
  // client libraries read theirs by path at each connection; the etcd
  // client's channel keeps the certificates it was made with.
  enum class Applies { kWithinRefresh, kNextConnection, kNextStart };
  struct File {
    const std::string SettingFiles::*contents;  // What it held.
    const char* flag;                           // The setting naming it.
    Applies applies;                            // When a change applies.
  };
  const Applies store_tls =
      sql ? Applies::kNextConnection : Applies::kNextStart;
  const File files[] = {
      {&SettingFiles::tls_cert, "--tls_cert", Applies::kWithinRefresh},
      {&SettingFiles::tls_key, "--tls_key", Applies::kWithinRefresh},
      {&SettingFiles::tls_client_ca, "--tls_client_ca",
       Applies::kWithinRefresh},
      {&SettingFiles::store_password, "--store_password_file",
       Applies::kNextConnection},
      {&SettingFiles::store_tls_ca, "--backend_tls_ca_cert_path", store_tls},
      {&SettingFiles::store_tls_cert, "--backend_tls_cert_path", store_tls},
      {&SettingFiles::store_tls_key, "--backend_tls_key_path", store_tls}};
  for (const File& file : files) {
    if (now.*file.contents == before.*file.contents) continue;
    switch (file.applies) {
      case Applies::kWithinRefresh:
        spdlog::info(
            "reload: the file of {} changed; new connections use it within "
            "{} s (open ones keep theirs)",
            file.flag, refresh_seconds);
        break;
      case Applies::kNextConnection:
        spdlog::info(
            "reload: the file of {} changed; the next {} to the store uses "
            "it (the session open now stays)",
            file.flag, sql ? "connection" : "login");
        break;
      case Applies::kNextStart:
        spdlog::warn(
            "reload: the file of {} changed; it applies at the next start",
            file.flag);
        break;
    }
  }
}

// The settings of `latest` that differ from `running`, by flag name (the
// values are not logged: some name secrets' files or carry a password).
std::vector<std::string> ChangedSettings(const ServerOptions& running,
                                         const ServerOptions& latest) {
  std::vector<std::string> changed;
  for (const std::unique_ptr<Setting>& setting : Settings()) {
    if (SettingText(setting->Get(running)) !=
        SettingText(setting->Get(latest))) {
      changed.push_back(setting->name());
    }
  }
  return changed;
}

}  // namespace

void MetasrvServer::Reload(const ServerOptions* latest) {
  absl::MutexLock lock(&reload_mu_);
  if (latest != nullptr) {
    // Checked values against checked values: a setting left to a rule (an
    // inferred backend, a derived bound) is compared as it is in force.
    absl::StatusOr<CheckedOptions> next = CheckOptions(*latest);
    if (!next.ok()) {
      spdlog::error("reload: {}; nothing changed",
                    std::string(next.status().message()));
      return;
    }
    ServerOptions running = options_;
    running.bind_addr = configured_bind_addr_;
    for (const std::string& name :
         ChangedSettings(running, next->options())) {
      if (name == "log_level") continue;
      spdlog::warn(
          "reload: --{} changed; it applies at the next start (restart the "
          "service)",
          name);
    }
    if (latest->log_level != log_level_) {
      if (absl::Status set = SetLogLevel(latest->log_level); set.ok()) {
        spdlog::warn("reload: --log_level is now {} (was {})",
                     latest->log_level, log_level_);
        log_level_ = latest->log_level;
      } else {
        spdlog::error("reload: {}; the log level stays {}",
                      std::string(set.message()), log_level_);
      }
    }
  }
  absl::StatusOr<CheckedOptions> checked = CheckOptions(options_);
  if (!checked.ok()) {
    spdlog::error("reload: {}; nothing changed",
                  std::string(checked.status().message()));
    return;
  }
  const SettingFiles& now = checked->files();
  if (now.admin_token != reloaded_files_.admin_token) {
    absl::StatusOr<AdminAuth> auth =
        AdminAuth::FromToken(now.admin_token, options_.admin_token_file);
    if (auth.ok()) {
      door_->SetAdminAuth(*std::move(auth));
      spdlog::info("reload: the admin token changed; admin calls need it now");
    } else {
      spdlog::error("reload: {}; the old admin token stays",
                    std::string(auth.status().message()));
    }
  }
  if (now.store_password != reloaded_files_.store_password &&
      election_ != nullptr) {
    election_->SetPassword(now.store_password);
  }
  LogFileChanges(reloaded_files_, now, options_.backend != "etcd_store",
                 kTlsRefreshSeconds);
  // The TLS files now rather than at the next refresh.
  if (tls_identity_ != nullptr) tls_identity_->Refresh().IgnoreError();
  reloaded_files_ = now;
  spdlog::info("reload: done");
}

}  // namespace metasrv::server
