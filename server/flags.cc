#include "server/flags.h"

#include <string>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "spdlog/spdlog.h"

ABSL_FLAG(std::string, bind_addr, "127.0.0.1:3002",
          "host:port to serve gRPC on (port 0 picks a free one)");
ABSL_FLAG(std::string, server_addr, "",
          "address advertised to clients (AskLeader, election); "
          "default: --bind_addr");
ABSL_FLAG(absl::Duration, heartbeat_interval, absl::Seconds(3),
          "heartbeat interval told to clients at handshake");
ABSL_FLAG(absl::Duration, retry_interval, absl::Seconds(3),
          "retry interval told to clients at handshake");
ABSL_FLAG(absl::Duration, shutdown_grace, absl::Seconds(2),
          "how long shutdown waits for calls in flight");
ABSL_FLAG(std::string, log_level, "info",
          "trace, debug, info, warn, error or off");

namespace metasrv::server {

absl::StatusOr<ServerOptions> OptionsFromFlags() {
  ServerOptions o;
  o.bind_addr = absl::GetFlag(FLAGS_bind_addr);
  o.server_addr = absl::GetFlag(FLAGS_server_addr);
  const absl::Duration hb = absl::GetFlag(FLAGS_heartbeat_interval);
  const absl::Duration retry = absl::GetFlag(FLAGS_retry_interval);
  if (hb <= absl::ZeroDuration() || retry <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "--heartbeat_interval and --retry_interval must be positive");
  }
  o.heartbeat_interval_ms = static_cast<uint64_t>(absl::ToInt64Milliseconds(hb));
  o.retry_interval_ms = static_cast<uint64_t>(absl::ToInt64Milliseconds(retry));
  o.shutdown_grace = absl::GetFlag(FLAGS_shutdown_grace);
  return o;
}

absl::Status ApplyLogLevelFlag() {
  const std::string name = absl::GetFlag(FLAGS_log_level);
  const spdlog::level::level_enum level = spdlog::level::from_str(name);
  // from_str answers "off" for names it does not know.
  if (level == spdlog::level::off && name != "off") {
    return absl::InvalidArgumentError(
        absl::StrCat("--log_level: unknown level '", name, "'"));
  }
  spdlog::set_level(level);
  return absl::OkStatus();
}

}  // namespace metasrv::server
