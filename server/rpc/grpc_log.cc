#include "server/rpc/grpc_log.h"

#include <grpc/support/log.h>

#include <atomic>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "spdlog/spdlog.h"

namespace metasrv::server {
namespace {

// What has been written from each place in gRPC's code.
class RateLimit {
 public:
  // Whether a line from `file:line` may be written now; if so, sets
  // `*left_out` to how many from there were suppressed since the last one.
  bool Admit(const char* file, int line, uint64_t* left_out) {
    const absl::Time now = absl::Now();
    absl::MutexLock lock(&mu_);
    Place& place = places_[std::make_pair(std::string(file), line)];
    if (now - place.last < interval_) {
      ++place.suppressed;
      suppressed_total_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    place.last = now;
    *left_out = std::exchange(place.suppressed, 0);
    return true;
  }
  void set_interval(absl::Duration d) {
    absl::MutexLock lock(&mu_);
    interval_ = d;
  }
  uint64_t suppressed_total() const { return suppressed_total_.load(); }

 private:
  struct Place {
    absl::Time last = absl::InfinitePast();  // When a line was last written.
    uint64_t suppressed = 0;                 // Left out since then.
  };
  absl::Mutex mu_;  // Guards the fields below.
  absl::Duration interval_ ABSL_GUARDED_BY(mu_) =
      absl::Seconds(10);  // Between lines.
  // By (file, line) of gRPC's source.
  absl::flat_hash_map<std::pair<std::string, int>, Place> places_
      ABSL_GUARDED_BY(mu_);
  std::atomic<uint64_t> suppressed_total_{0};  // All left out, ever.
};

RateLimit& Limit() {
  static RateLimit* limit = new RateLimit();
  return *limit;
}

void Log(gpr_log_func_args* args) {
  spdlog::level::level_enum level = spdlog::level::trace;
  if (args->severity == GPR_LOG_SEVERITY_ERROR) {
    level = spdlog::level::warn;
  } else if (args->severity == GPR_LOG_SEVERITY_INFO) {
    level = spdlog::level::debug;
  }
  // Every request of a zstd-compressing client (GreptimeDB's) makes gRPC
  // 1.51 complain about the encoding header it does not know.
  if (absl::StrContains(args->message, "grpc-encoding")) {
    level = spdlog::level::debug;
  }
  if (!spdlog::should_log(level)) return;
  uint64_t left_out = 0;
  if (!Limit().Admit(args->file, args->line, &left_out)) return;
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
  Limit().set_interval(interval);
  // gRPC formats a line only at or above its verbosity: keep its info and
  // debug lines unformatted unless spdlog would show them.
  gpr_set_log_verbosity(spdlog::should_log(spdlog::level::debug)
                            ? GPR_LOG_SEVERITY_INFO
                            : GPR_LOG_SEVERITY_ERROR);
  gpr_set_log_function(Log);
}

uint64_t GrpcLogLinesSuppressed() { return Limit().suppressed_total(); }

}  // namespace metasrv::server
