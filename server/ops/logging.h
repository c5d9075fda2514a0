// The process's logging: spdlog to stderr, times in UTC (RFC 3339 with Z),
// as text lines or as one JSON object per line.
#ifndef METASRV_SERVER_OPS_LOGGING_H_
#define METASRV_SERVER_OPS_LOGGING_H_

#include <string>

#include "absl/status/status.h"

namespace metasrv::server {

// Sets the default logger's level ("trace" ... "off") and format ("text" or
// "json"). kInvalidArgument naming the flag for an unknown one; nothing
// changes then. Call before other threads log.
absl::Status ConfigureLogging(const std::string& level,
                              const std::string& format);

// `text` as the inside of a JSON string (quotes, backslashes and control
// characters escaped; other bytes as they are).
std::string JsonEscape(const std::string& text);

}  // namespace metasrv::server

#endif  // METASRV_SERVER_OPS_LOGGING_H_
