#include "server/config/setting.h"

#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "server/config/units.h"

namespace metasrv::server {
namespace {

const char* KindName(SettingInput::Kind kind) {
  switch (kind) {
    case SettingInput::kString:
      return "a string";
    case SettingInput::kInteger:
      return "an integer";
    case SettingInput::kFloat:
      return "a float";
    case SettingInput::kBool:
      return "a boolean";
    case SettingInput::kList:
      return "a list";
    case SettingInput::kTable:
      return "a table";
    default:
      return "another type";
  }
}

absl::Status Wrong(const SettingInput& in, const std::string& source,
                   const char* expected) {
  return absl::InvalidArgumentError(absl::StrCat(
      source, ": expected ", expected, ", got ",
      in.kind == SettingInput::kText ? absl::StrCat("'", in.text, "'")
                                     : KindName(in.kind)));
}

// Whether `in` is text: untyped, or a TOML string.
bool IsText(const SettingInput& in) {
  return in.kind == SettingInput::kText || in.kind == SettingInput::kString;
}

// An integer setting's value: a TOML integer, or text that is an integer
// or a size ("4MiB").
absl::Status ParseCount(const SettingInput& in, const std::string& source,
                        uint64_t max, uint64_t* out) {
  constexpr char kExpected[] = "an integer or a size such as \"4MiB\"";
  uint64_t n = 0;
  if (in.kind == SettingInput::kInteger) {
    if (!absl::SimpleAtoi(in.text, &n)) return Wrong(in, source, kExpected);
  } else if (!IsText(in)) {
    return Wrong(in, source, kExpected);
  } else if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(in.text), &n)) {
    absl::StatusOr<uint64_t> size = ParseReadableSize(in.text);
    if (!size.ok()) return Wrong(in, source, kExpected);
    n = *size;
  }
  if (n > max) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": ", n, " is more than the most, ", max));
  }
  *out = n;
  return absl::OkStatus();
}

}  // namespace

std::string SettingText(const SettingValue& value) {
  if (const auto* s = std::get_if<std::string>(&value)) return *s;
  if (const auto* n = std::get_if<int64_t>(&value)) return absl::StrCat(*n);
  return absl::StrJoin(std::get<std::vector<std::string>>(value), ",");
}

absl::Status ParseSetting(const SettingInput& in, const std::string& source,
                          std::string* out) {
  if (!IsText(in)) return Wrong(in, source, "a string");
  *out = in.text;
  return absl::OkStatus();
}

absl::Status ParseSetting(const SettingInput& in, const std::string& source,
                          std::vector<std::string>* out) {
  if (in.kind == SettingInput::kList) {
    *out = in.items;
  } else if (IsText(in)) {
    *out = absl::StrSplit(in.text, ',', absl::SkipEmpty());
  } else {
    return Wrong(in, source, "a list of strings");
  }
  return absl::OkStatus();
}

absl::Status ParseSetting(const SettingInput& in, const std::string& source,
                          absl::Duration* out) {
  constexpr char kExpected[] = "a duration such as \"3s\" or \"500ms\"";
  if (!IsText(in)) return Wrong(in, source, kExpected);
  // absl's form ("1h30m", "inf", "-1s") first, then humantime's ("24hours").
  if (absl::ParseDuration(std::string(absl::StripAsciiWhitespace(in.text)),
                          out)) {
    return absl::OkStatus();
  }
  absl::StatusOr<absl::Duration> human = ParseHumanDuration(in.text);
  if (!human.ok()) return Wrong(in, source, kExpected);
  *out = *human;
  return absl::OkStatus();
}

absl::Status ParseSetting(const SettingInput& in, const std::string& source,
                          int* out) {
  uint64_t n = 0;
  absl::Status parsed =
      ParseCount(in, source, std::numeric_limits<int>::max(), &n);
  if (parsed.ok()) *out = static_cast<int>(n);
  return parsed;
}

absl::Status ParseSetting(const SettingInput& in, const std::string& source,
                          uint64_t* out) {
  return ParseCount(in, source, std::numeric_limits<int64_t>::max(), out);
}

SettingValue ToSettingValue(const std::string& v) { return v; }
SettingValue ToSettingValue(const std::vector<std::string>& v) { return v; }
SettingValue ToSettingValue(absl::Duration v) { return WholeUnits(v); }
SettingValue ToSettingValue(int v) { return int64_t{v}; }
SettingValue ToSettingValue(uint64_t v) { return static_cast<int64_t>(v); }

std::string Setting::env() const {
  return absl::StrCat(
      "GREPTIMEDB_METASRV__",
      absl::AsciiStrToUpper(absl::StrReplaceAll(key(), {{".", "__"}})));
}

}  // namespace metasrv::server
