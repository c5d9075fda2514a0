// The process's logging: spdlog to stderr, times in UTC (RFC 3339 with Z),
// as text lines or as one JSON object per line.
#ifndef METASRV_SERVER_OPS_LOGGING_H_
#define METASRV_SERVER_OPS_LOGGING_H_

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace metasrv::server {

// Sets the default logger's level ("trace" ... "off") and format ("text" or
// "json"). kInvalidArgument naming the flag for an unknown one; nothing
// changes then. Call before other threads log.
absl::Status ConfigureLogging(const std::string& level,
                              const std::string& format);

// Sets the default logger's level alone ("trace" ... "off"), as a reload
// does; safe while other threads log. kInvalidArgument naming --log_level
// for an unknown one; nothing changes then.
absl::Status SetLogLevel(const std::string& level);

// Also writes the default logger's lines, in its format, to files in `dir`
// (created if missing), as GreptimeDB's [logging] dir does: a new file every
// hour (metasrv_YYYY-MM-DD_HH.log), the newest `max_files` kept.
// kInvalidArgument naming --log_dir if the folder cannot be made or written.
// Call before ConfigureLogging, before other threads log.
absl::Status AddLogFiles(const std::string& dir, uint16_t max_files);

// Fields the JSON lines logged on this thread carry, besides time, level
// and msg, while this lives ("node_id", "peer", "role", "state_generation"):
// what a log pipeline filters on without parsing the message. The text format
// shows only the message, which names them too. Scopes nest; not copyable.
class LogFields {
 public:
  LogFields(std::initializer_list<std::pair<const char*, std::string>> fields);
  ~LogFields();
  LogFields(const LogFields&) = delete;
  LogFields& operator=(const LogFields&) = delete;

 private:
  size_t outer_;  // How many fields the enclosing scopes set.
};

// `text` as the inside of a JSON string: quotes, backslashes, control bytes,
// DEL and every byte of broken UTF-8 escaped, so the line is valid JSON
// whatever a client put into the message.
std::string JsonEscape(const std::string& text);

// Every message and field value goes through core::AppendInert (a newline
// would start a forged line; C1 controls and broken UTF-8 are escaped too).

}  // namespace metasrv::server

#endif  // METASRV_SERVER_OPS_LOGGING_H_
