#include "server/rpc/grpc_log.h"

#include <grpc/support/log.h>

#include "absl/strings/str_cat.h"
#include "server/ops/log_limit.h"
#include "spdlog/spdlog.h"

namespace metasrv::server {
namespace {

void Log(gpr_log_func_args* args) {
  spdlog::level::level_enum level = spdlog::level::trace;
  if (args->severity == GPR_LOG_SEVERITY_ERROR) {
    level = spdlog::level::warn;
  } else if (args->severity == GPR_LOG_SEVERITY_INFO) {
    level = spdlog::level::debug;
  }
  if (!spdlog::should_log(level)) return;
  uint64_t left_out = 0;
  if (!AdmitLogLine(absl::StrCat(args->file, ":", args->line), "", &left_out)) {
    return;
  }
  if (left_out > 0) {
    spdlog::log(level, "grpc: {} ({}:{}; {} more like it left out)",
                args->message, args->file, args->line, left_out);
  } else {
    spdlog::log(level, "grpc: {} ({}:{})", args->message, args->file,
                args->line);
  }
}

}  // namespace

void RouteGrpcLogsToSpdlog(absl::Duration interval) {
  SetLogLineInterval(interval);
  // gRPC formats a line only at or above its verbosity: keep its info and
  // debug lines unformatted unless spdlog would show them.
  gpr_set_log_verbosity(spdlog::should_log(spdlog::level::debug)
                            ? GPR_LOG_SEVERITY_INFO
                            : GPR_LOG_SEVERITY_ERROR);
  gpr_set_log_function(Log);
}

uint64_t GrpcLogLinesSuppressed() { return LogLinesSuppressed(); }

}  // namespace metasrv::server
