#include "server/config/units.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace metasrv::server {
namespace {

// humantime's unit names, and what each is.
constexpr std::pair<const char*, int64_t> kUnitNanos[] = {
    {"nanoseconds", 1},
    {"nanosecond", 1},
    {"nsec", 1},
    {"ns", 1},
    {"microseconds", 1000},
    {"microsecond", 1000},
    {"usec", 1000},
    {"us", 1000},
    {"milliseconds", 1000000},
    {"millisecond", 1000000},
    {"millis", 1000000},
    {"msec", 1000000},
    {"ms", 1000000},
    {"seconds", 1000000000},
    {"second", 1000000000},
    {"secs", 1000000000},
    {"sec", 1000000000},
    {"s", 1000000000},
    {"minutes", 60000000000},
    {"minute", 60000000000},
    {"mins", 60000000000},
    {"min", 60000000000},
    {"m", 60000000000},
    {"hours", 3600000000000},
    {"hour", 3600000000000},
    {"hrs", 3600000000000},
    {"hr", 3600000000000},
    {"h", 3600000000000},
    {"days", 86400000000000},
    {"day", 86400000000000},
    {"d", 86400000000000},
    {"weeks", 604800000000000},
    {"week", 604800000000000},
    {"w", 604800000000000},
};

// The length of the run of `s` from `i` whose characters pass `pass`.
template <typename Pass>
size_t RunLength(absl::string_view s, size_t i, Pass pass) {
  size_t n = 0;
  while (i + n < s.size() && pass(s[i + n])) ++n;
  return n;
}

// The duration one unit name stands for; false for an unknown one.
bool UnitDuration(absl::string_view unit, absl::Duration* out) {
  for (const auto& [name, nanos] : kUnitNanos) {
    if (unit == name) {
      *out = absl::Nanoseconds(nanos);
      return true;
    }
  }
  return false;
}

}  // namespace

absl::StatusOr<absl::Duration> ParseHumanDuration(const std::string& text) {
  const absl::string_view s = absl::StripAsciiWhitespace(text);
  if (s == "0") return absl::ZeroDuration();
  const absl::Status bad = absl::InvalidArgumentError(absl::StrCat(
      "'", text, "' is not a duration (such as 3s, 500ms, 24hours)"));
  if (s.empty()) return bad;
  auto space = [](char c) { return c == ' '; };
  auto number = [](char c) { return absl::ascii_isdigit(c) || c == '.'; };
  auto letter = [](char c) { return absl::ascii_isalpha(c) != 0; };
  absl::Duration total;
  size_t i = 0;
  while (i < s.size()) {
    i += RunLength(s, i, space);
    const size_t digits = RunLength(s, i, number);
    double n = 0;
    if (digits == 0 || !absl::SimpleAtod(s.substr(i, digits), &n)) return bad;
    i += digits;
    i += RunLength(s, i, space);
    const size_t letters = RunLength(s, i, letter);
    absl::Duration unit;
    if (!UnitDuration(s.substr(i, letters), &unit)) return bad;
    i += letters;
    total += unit * n;
  }
  return total;
}

absl::StatusOr<uint64_t> ParseReadableSize(const std::string& text) {
  const absl::string_view s = absl::StripAsciiWhitespace(text);
  const size_t digits = RunLength(s, 0, [](char c) {
    return absl::ascii_isdigit(c) || c == '.' || c == 'e' || c == 'E' ||
           c == '+';
  });
  double n = 0;
  const absl::string_view unit = absl::StripAsciiWhitespace(s.substr(digits));
  const std::pair<const char*, double> units[] = {
      {"", 1},         {"B", 1},        {"K", 0x1p10},   {"KB", 0x1p10},
      {"KiB", 0x1p10}, {"M", 0x1p20},   {"MB", 0x1p20},  {"MiB", 0x1p20},
      {"G", 0x1p30},   {"GB", 0x1p30},  {"GiB", 0x1p30}, {"T", 0x1p40},
      {"TB", 0x1p40},  {"TiB", 0x1p40}, {"P", 0x1p50},   {"PB", 0x1p50},
      {"PiB", 0x1p50}};
  if (digits > 0 && absl::SimpleAtod(s.substr(0, digits), &n) && n >= 0) {
    for (const auto& [name, factor] : units) {
      const double bytes = n * factor;
      if (unit == name && bytes < 0x1p63) return static_cast<uint64_t>(bytes);
    }
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "'", text, "' is not a size (such as 4194304, 512KiB, 4MB)"));
}

std::string WholeUnits(absl::Duration d) {
  if (d == absl::ZeroDuration()) return "0s";
  if (d == absl::InfiniteDuration()) return "inf";
  const std::pair<absl::Duration, const char*> units[] = {
      {absl::Hours(1), "h"},         {absl::Minutes(1), "m"},
      {absl::Seconds(1), "s"},       {absl::Milliseconds(1), "ms"},
      {absl::Microseconds(1), "us"}, {absl::Nanoseconds(1), "ns"}};
  for (const auto& [unit, name] : units) {
    absl::Duration rem;
    const int64_t n = absl::IDivDuration(d, unit, &rem);
    if (rem == absl::ZeroDuration()) return absl::StrCat(n, name);
  }
  return absl::FormatDuration(d);
}

}  // namespace metasrv::server
