// Log lines that a client can cause, bounded in rate: one line per place per
// interval, the next one saying how many were left out, the rest counted.
#ifndef METASRV_SERVER_OPS_LOG_LIMIT_H_
#define METASRV_SERVER_OPS_LOG_LIMIT_H_

#include <cstdint>
#include <string>
#include <utility>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "spdlog/spdlog.h"

namespace metasrv::server {

// Whether a line from `place` may be written now (at most one per interval
// for each place); if so, sets `*left_out` to how many from there were left
// out since. Thread-safe.
bool AdmitLogLine(absl::string_view place, uint64_t* left_out);

// The interval between two lines of one place (10 s unless set; tests).
void SetLogLineInterval(absl::Duration interval);

// Lines left out so far, over every place (metasrv_log_lines_suppressed).
uint64_t LogLinesSuppressed();

// Logs `fmt` at `level`, rate-limited per `place` (a short constant naming
// the call site), with the count of lines left out since the last one.
template <typename... Args>
void LogLimited(spdlog::level::level_enum level, absl::string_view place,
                spdlog::format_string_t<Args...> fmt, Args&&... args) {
  if (!spdlog::should_log(level)) return;
  uint64_t left_out = 0;
  if (!AdmitLogLine(place, &left_out)) return;
  std::string line = fmt::format(fmt, std::forward<Args>(args)...);
  if (left_out > 0) {
    spdlog::log(level, "{} ({} more like it left out)", line, left_out);
  } else {
    spdlog::log(level, "{}", line);
  }
}

}  // namespace metasrv::server

#endif  // METASRV_SERVER_OPS_LOG_LIMIT_H_
