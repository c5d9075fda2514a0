// The process's logging: spdlog to stderr, times in UTC (RFC 3339 with Z),
// as text lines or as one JSON object per line.
#ifndef METASRV_SERVER_OPS_LOGGING_H_
#define METASRV_SERVER_OPS_LOGGING_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace metasrv::server {

// Sets the default logger's level ("trace" ... "off") and format ("text" or
// "json"). kInvalidArgument naming the flag for an unknown one; nothing
// changes then. Call before other threads log.
absl::Status ConfigureLogging(const std::string& level,
                              const std::string& format);

// Also writes the default logger's lines, in its format, to files in `dir`
// (created if missing), as GreptimeDB's [logging] dir does: a new file every
// hour (metasrv_YYYY-MM-DD_HH.log), the newest `max_files` kept.
// kInvalidArgument naming --log_dir if the folder cannot be made or written.
// Call before ConfigureLogging, before other threads log.
absl::Status AddLogFiles(const std::string& dir, uint16_t max_files);

// `text` as the inside of a JSON string: quotes, backslashes, control bytes,
// DEL and every byte of broken UTF-8 escaped, so the line is valid JSON
// whatever a client put into the message.
std::string JsonEscape(const std::string& text);

// Appends `text` to `out` with every byte that could forge or garble a log
// line escaped: control bytes (a newline would start a forged line), DEL,
// and bytes of broken UTF-8; as JSON string content with `json`, else as
// \xNN. Well-formed UTF-8 stays as it is. Both formats go through it.
void AppendLogSafe(absl::string_view text, bool json, std::string* out);

// The length of the well-formed UTF-8 sequence at `text[i]`, or 0 (an
// overlong form, a surrogate, past U+10FFFF, cut short).
size_t Utf8SequenceAt(absl::string_view text, size_t i);
bool IsValidUtf8(absl::string_view text);

}  // namespace metasrv::server

#endif  // METASRV_SERVER_OPS_LOGGING_H_
