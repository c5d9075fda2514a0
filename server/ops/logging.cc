#include "server/ops/logging.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "spdlog/pattern_formatter.h"
#include "spdlog/spdlog.h"

namespace metasrv::server {
namespace {

// One JSON object per record: time (UTC, RFC 3339, ms), level, message.
class JsonFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg,
              spdlog::memory_buf_t& dest) override {
    const std::string line = absl::StrCat(
        "{\"time\":\"",
        absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::FromChrono(msg.time),
                         absl::UTCTimeZone()),
        "\",\"level\":\"",
        std::string(spdlog::level::to_string_view(msg.level).data(),
                    spdlog::level::to_string_view(msg.level).size()),
        "\",\"msg\":\"",
        JsonEscape(std::string(msg.payload.data(), msg.payload.size())),
        "\"}\n");
    dest.append(line.data(), line.data() + line.size());
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<JsonFormatter>();
  }
};

}  // namespace

std::string JsonEscape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += absl::StrFormat("\\u%04x", static_cast<unsigned char>(c));
        } else {
          out += c;
        }
    }
  }
  return out;
}

absl::Status ConfigureLogging(const std::string& level,
                              const std::string& format) {
  const spdlog::level::level_enum parsed = spdlog::level::from_str(level);
  // from_str answers "off" for names it does not know.
  if (parsed == spdlog::level::off && level != "off") {
    return absl::InvalidArgumentError(
        absl::StrCat("--log_level: unknown level '", level,
                     "' (trace, debug, info, warn, error or off)"));
  }
  if (format == "json") {
    spdlog::set_formatter(std::make_unique<JsonFormatter>());
  } else if (format == "text") {
    spdlog::set_formatter(std::make_unique<spdlog::pattern_formatter>(
        "%Y-%m-%dT%H:%M:%S.%eZ %^%l%$ %v", spdlog::pattern_time_type::utc));
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "--log_format: unknown format '", format, "' (text or json)"));
  }
  spdlog::set_level(parsed);
  return absl::OkStatus();
}

}  // namespace metasrv::server
