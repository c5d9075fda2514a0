// Log lines that a client can cause, bounded in rate: per event and subject
// (the node or client host it is about) a few lines, then one per interval,
// the next one saying how many were left out; and at most so many lines per
// interval over all subjects of an event. The rest is counted.
#ifndef METASRV_SERVER_OPS_LOG_LIMIT_H_
#define METASRV_SERVER_OPS_LOG_LIMIT_H_

#include <cstdint>
#include <string>
#include <utility>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/clock.h"
#include "spdlog/spdlog.h"

namespace metasrv::server {

// Lines of one event about one subject written back to back before the
// limit of one per interval applies.
inline constexpr int kLogLineBurst = 3;
// Lines of one event per interval over all its subjects.
inline constexpr int kLogLinesPerEvent = 100;
// Subjects remembered at once per event; past it, the least recently seen
// is forgotten. Lines about subjects an event does not know have a bucket
// of their own (kLogLinesPerEvent too): the first lines about a new node or
// host get out whatever others keep fresh.
inline constexpr int kLogSubjects = 4096;

// Whether a line of `event` about `subject` ("" when it is about nothing in
// particular) may be written now; if so, sets `*left_out` to how many of
// that event and subject were left out since the last one written.
// Thread-safe.
bool AdmitLogLine(absl::string_view event, absl::string_view subject,
                  uint64_t* left_out);

// The interval of the limits (10 s unless set; tests). Zero: no limit.
// Forgets every line counted so far.
void SetLogLineInterval(absl::Duration interval);
// The clock the limits are timed on (borrowed; null: the system clock).
// For tests.
void SetLogLineClock(const core::Clock* clock);

// Lines left out so far, over every event (metasrv_log_lines_suppressed).
uint64_t LogLinesSuppressed();

// Logs `fmt` at `level`, rate-limited per `event` (a short constant naming
// what happened) and `subject` (a node id, a client host; "" for none),
// with the count of lines left out since the last one.
template <typename... Args>
void LogLimited(spdlog::level::level_enum level, absl::string_view event,
                absl::string_view subject, spdlog::format_string_t<Args...> fmt,
                Args&&... args) {
  if (!spdlog::should_log(level)) return;
  uint64_t left_out = 0;
  if (!AdmitLogLine(event, subject, &left_out)) return;
  std::string line = fmt::format(fmt, std::forward<Args>(args)...);
  if (left_out > 0) {
    spdlog::log(level, "{} ({} more like it left out)", line, left_out);
  } else {
    spdlog::log(level, "{}", line);
  }
}

}  // namespace metasrv::server

#endif  // METASRV_SERVER_OPS_LOG_LIMIT_H_
