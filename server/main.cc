// metasrv: the flow-state metadata service. See README.md.
#include <csignal>
#include <cstdlib>

#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/synchronization/mutex.h"
#include "server/metasrv_server.h"
#include "server/ops/flags.h"
#include "server/rpc/grpc_log.h"
#include "spdlog/sinks/stdout_color_sinks.h"
#include "spdlog/spdlog.h"

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "metasrv: flow-state metadata service for GreptimeDB flownodes.\n"
      "  metasrv --bind_addr=127.0.0.1:3002 [--flagfile=metasrv.flags]");
  absl::ParseCommandLine(argc, argv);
  // Lock-order checking stays on in tests; in the server it costs time on
  // every lock and would abort the process on a finding.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  spdlog::set_default_logger(spdlog::stderr_color_mt("metasrv"));
  if (absl::Status s = metasrv::server::ApplyLogLevelFlag(); !s.ok()) {
    spdlog::error("{}", s.ToString());
    return 2;
  }
  metasrv::server::RouteGrpcLogsToSpdlog();
  absl::StatusOr<metasrv::server::ServerOptions> options =
      metasrv::server::OptionsFromFlags();
  if (!options.ok()) {
    spdlog::error("{}", options.status().ToString());
    return 2;
  }
  // Block the stop signals in every thread (gRPC's inherit the mask) and
  // wait for them here, so shutdown runs on an ordinary thread.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  auto server = metasrv::server::MetasrvServer::Start(*std::move(options));
  if (!server.ok()) {
    spdlog::error("{}", server.status().ToString());
    return 1;
  }
  int signal = 0;
  sigwait(&stop_signals, &signal);
  spdlog::info("received signal {}; shutting down", signal);
  (*server)->Shutdown();
  (*server)->Wait();
  spdlog::info("stopped");
  return 0;
}
