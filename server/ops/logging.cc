#include "server/ops/logging.h"

#include <unistd.h>

#include <filesystem>
#include <memory>
#include <system_error>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/inert_text.h"
#include "spdlog/pattern_formatter.h"
#include "spdlog/sinks/hourly_file_sink.h"
#include "spdlog/spdlog.h"

namespace metasrv::server {
namespace {

// One JSON object per record: time (UTC, RFC 3339, ms), level, message.
// This thread's LogFields, outermost first.
thread_local std::vector<std::pair<const char*, std::string>> tls_fields;

class JsonFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg,
              spdlog::memory_buf_t& dest) override {
    std::string line = absl::StrCat(
        "{\"time\":\"",
        absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::FromChrono(msg.time),
                         absl::UTCTimeZone()),
        "\",\"level\":\"",
        std::string(spdlog::level::to_string_view(msg.level).data(),
                    spdlog::level::to_string_view(msg.level).size()),
        "\",\"msg\":\"",
        JsonEscape(std::string(msg.payload.data(), msg.payload.size())), "\"");
    for (const auto& [name, value] : tls_fields) {
      absl::StrAppend(&line, ",\"", name, "\":\"", JsonEscape(value), "\"");
    }
    line += "}\n";
    dest.append(line.data(), line.data() + line.size());
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<JsonFormatter>();
  }
};

// The text format's message: every byte a client can choose escaped.
class EscapedMessage final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    std::string line;
    core::AppendInert(absl::string_view(msg.payload.data(), msg.payload.size()),
                      /*json=*/false, &line);
    dest.append(line.data(), line.data() + line.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<EscapedMessage>();
  }
};

}  // namespace

std::string JsonEscape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  core::AppendInert(text, /*json=*/true, &out);
  return out;
}

LogFields::LogFields(
    std::initializer_list<std::pair<const char*, std::string>> fields)
    : outer_(tls_fields.size()) {
  tls_fields.insert(tls_fields.end(), fields.begin(), fields.end());
}

LogFields::~LogFields() { tls_fields.resize(outer_); }

absl::Status AddLogFiles(const std::string& dir, uint16_t max_files) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error || access(dir.c_str(), W_OK) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--log_dir ", dir, ": cannot write there",
                     error ? absl::StrCat(" (", error.message(), ")") : ""));
  }
  spdlog::sink_ptr files;
  try {
    // spdlog reports a file it cannot open by throwing; nothing else here
    // does, and the exception stops here.
    files = std::make_shared<spdlog::sinks::hourly_file_sink_mt>(
        (std::filesystem::path(dir) / "metasrv.log").string(),
        /*truncate=*/false, max_files);
  } catch (const spdlog::spdlog_ex& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("--log_dir ", dir, ": ", e.what()));
  }
  spdlog::default_logger()->sinks().push_back(std::move(files));
  // Every line reaches the file at once: lines are few (the per-request
  // ones are rate-limited), and a killed process loses none.
  spdlog::default_logger()->flush_on(spdlog::level::trace);
  return absl::OkStatus();
}

namespace {

absl::StatusOr<spdlog::level::level_enum> ParseLevel(const std::string& level) {
  const spdlog::level::level_enum parsed = spdlog::level::from_str(level);
  // from_str answers "off" for names it does not know.
  if (parsed == spdlog::level::off && level != "off") {
    return absl::InvalidArgumentError(
        absl::StrCat("--log_level: unknown level '", level,
                     "' (trace, debug, info, warn, error or off)"));
  }
  return parsed;
}

}  // namespace

absl::Status SetLogLevel(const std::string& level) {
  absl::StatusOr<spdlog::level::level_enum> parsed = ParseLevel(level);
  if (!parsed.ok()) return parsed.status();
  spdlog::set_level(*parsed);
  return absl::OkStatus();
}

absl::Status ConfigureLogging(const std::string& level,
                              const std::string& format) {
  absl::StatusOr<spdlog::level::level_enum> parsed = ParseLevel(level);
  if (!parsed.ok()) return parsed.status();
  if (format == "json") {
    spdlog::set_formatter(std::make_unique<JsonFormatter>());
  } else if (format == "text") {
    auto text = std::make_unique<spdlog::pattern_formatter>(
        spdlog::pattern_time_type::utc);
    text->add_flag<EscapedMessage>('*').set_pattern(
        "%Y-%m-%dT%H:%M:%S.%eZ %^%l%$ %*");
    spdlog::set_formatter(std::move(text));
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "--log_format: unknown format '", format, "' (text or json)"));
  }
  spdlog::set_level(*parsed);
  return absl::OkStatus();
}

}  // namespace metasrv::server
