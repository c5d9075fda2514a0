// metasrv: the flow-state metadata service. See README.md.
#include <systemd/sd-daemon.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "server/config/checked_options.h"
#include "server/config/command_line.h"
#include "server/metasrv_server.h"
#include "server/ops/logging.h"
#include "server/ops/metrics.h"
#include "server/rpc/grpc_log.h"
#include "spdlog/sinks/stdout_color_sinks.h"
#include "spdlog/spdlog.h"

extern char** environ;

namespace {

// The default logger as `given` says: stderr, and files with a log_dir.
absl::Status SetUpLogging(const metasrv::server::ServerOptions& given) {
  namespace srv = metasrv::server;
  spdlog::set_default_logger(spdlog::stderr_color_mt("metasrv"));
  if (!given.log_dir.empty()) {
    absl::Status files = srv::AddLogFiles(
        given.log_dir, static_cast<uint16_t>(std::clamp<uint64_t>(
                           given.log_max_files, 1, 65535)));
    if (!files.ok()) return files;
  }
  return srv::ConfigureLogging(given.log_level, given.log_format);
}

// Serves `checked` until SIGTERM or SIGINT (SIGHUP reloads, reading the
// command line `argc`/`argv` and `env` again); the exit code.
int Serve(const metasrv::server::CheckedOptions& checked, int argc, char** argv,
          const std::vector<std::string>& env) {
  namespace srv = metasrv::server;
  // Block the stop signals in every thread (gRPC's inherit the mask) and
  // wait for them here, so shutdown runs on an ordinary thread.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGHUP);  // Reload, not stop.
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  auto server = srv::MetasrvServer::Start(checked);
  if (!server.ok()) {
    spdlog::error("{}", server.status().ToString());
    // A store that refuses the credentials at start is as much a usage
    // error as a bad flag: exit 2, which a supervisor does not restart in a
    // loop.
    return absl::IsInvalidArgument(server.status()) ? srv::kExitUsage
                                                    : srv::kExitRuntime;
  }
  // Under systemd (Type=notify): serving now. A no-op elsewhere.
  sd_notify(0, "READY=1");
  int signal = 0;
  while (sigwait(&stop_signals, &signal) == 0 && signal == SIGHUP) {
    spdlog::info(
        "received SIGHUP; re-reading the configuration and the files the "
        "settings name");
    // The configuration as it is now: the command line again, with the
    // config file and environment it names.
    srv::CommandLine latest = srv::ReadCommandLine(
        argc, argv, env, checked.options().log_format == "json");
    for (const std::string& line : latest.overridden) {
      spdlog::info("reload: config: {}", line);
    }
    if (latest.exit_code >= 0) {
      spdlog::error(
          "reload: the configuration no longer reads (see the line above); "
          "settings stay as they are");
      (*server)->Reload();
    } else {
      (*server)->Reload(&latest.options);
    }
  }
  sd_notify(0, "STOPPING=1");
  spdlog::info("received signal {}; shutting down", signal);
  (*server)->Shutdown();
  (*server)->Wait();
  spdlog::info("stopped");
  return srv::kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  namespace srv = metasrv::server;
  // gRPC's client channels (the etcd election's) see a connection finish
  // or fail only while some thread polls gRPC. No gRPC server runs here, so
  // between calls only gRPC's backup poller does, every 5 s by default: a
  // replica rejoined its store up to 5 s late after a partition healed
  // (PartitionTest). Before gRPC starts; an operator's value stands.
  setenv("GRPC_CLIENT_CHANNEL_BACKUP_POLL_INTERVAL_MS", "100", 0);
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
  srv::CommandLine command_line = srv::ReadCommandLine(argc, argv, env);
  if (command_line.exit_code >= 0) return command_line.exit_code;
  // Lock-order checking stays on in tests; in the server it costs time on
  // every lock and would abort the process on a finding.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  // Logging first, as the settings say, so that every line from here on
  // (a refused setting's too) is in the chosen format and files.
  if (absl::Status logging = SetUpLogging(command_line.options);
      !logging.ok()) {
    std::fprintf(stderr, "metasrv: %s\n",
                 std::string(logging.message()).c_str());
    return srv::kExitUsage;
  }
  // Every setting is checked, and the files they name read, before
  // anything starts: a configuration that cannot work exits 2.
  absl::StatusOr<srv::CheckedOptions> checked =
      srv::CheckOptions(std::move(command_line.options));
  if (!checked.ok()) {
    spdlog::error("{}", std::string(checked.status().message()));
    return srv::kExitUsage;
  }
  srv::RouteGrpcLogsToSpdlog();
  spdlog::info("{}", srv::VersionLine());
  if (!command_line.ignored_keys.empty()) {
    spdlog::warn("config: {}", command_line.ignored_keys);
  }
  for (const std::string& line : command_line.overridden) {
    spdlog::info("config: {}", line);
  }
  for (const std::string& line : checked->cautions()) {
    spdlog::warn("config: {}", line);
  }
  return Serve(*checked, argc, argv, env);
}
