// MetasrvServer::Reload(): what SIGHUP re-reads and when each change
// applies (split from metasrv_server.cc by role).
#include "server/metasrv_server.h"
#include "server/ops/admin_auth.h"
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

}  // namespace

void MetasrvServer::Reload() {
  absl::MutexLock lock(&reload_mu_);
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
  reloaded_files_ = now;
  spdlog::info("reload: done");
}

}  // namespace metasrv::server
