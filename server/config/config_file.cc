#include "server/config/config_file.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include <algorithm>
#include <fstream>
#include <sstream>

#define TOML_HEADER_ONLY 1
#define TOML_EXCEPTIONS 0
#include <toml++/toml.h>

#include "absl/container/flat_hash_map.h"
#include "absl/flags/reflection.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "server/config/flags.h"

namespace metasrv::server {
namespace {

// GreptimeDB's key (dotted path) -> this service's flag, same meaning.
constexpr std::pair<const char*, const char*> kGreptimeKeys[] = {
    {"store_addrs", "store_addrs"},
    {"backend", "backend"},
    {"store_key_prefix", "store_key_prefix"},
    {"heartbeat_interval", "heartbeat_interval"},
    {"node_max_idle_time", "node_max_idle_time"},
    {"grpc.bind_addr", "bind_addr"},
    {"grpc.server_addr", "server_addr"},
    {"grpc.max_recv_message_size", "max_message_bytes"},
    {"grpc.http2_keep_alive_interval", "keepalive_time"},
    {"grpc.http2_keep_alive_timeout", "keepalive_timeout"},
    {"http.addr", "metrics_addr"},
    {"logging.level", "log_level"},
    {"logging.log_format", "log_format"},
    {"backend_tls.mode", "backend_tls_mode"},
    {"backend_tls.ca_cert_path", "backend_tls_ca_cert_path"},
    {"backend_tls.cert_path", "backend_tls_cert_path"},
    {"backend_tls.key_path", "backend_tls_key_path"},
};

// GreptimeDB keys and sections that mean nothing for this service.
constexpr const char* kIgnoredGreptimeKeys[] = {
    "data_home",
    "meta_table_name",
    "meta_schema_name",
    "auto_create_schema",
    "meta_election_lock_id",
    "selector",
    "enable_region_failover",
    "region_failure_detector_initialization_delay",
    "allow_region_failover_on_local_wal",
    "enable_telemetry",
    "runtime",
    "backend_client",
    "procedure",
    "failure_detector",
    "datanode",
    "wal",
    "event_recorder",
    "stats_persistence",
    "gc",
    "memory",
    "tracing",
    "grpc.runtime_size",
    "grpc.max_send_message_size",
    "http.timeout",
    "http.body_limit",
    "logging.dir",
    "logging.enable_otlp_tracing",
    "logging.otlp_endpoint",
    "logging.append_stdout",
    "logging.max_log_files",
    "logging.otlp_export_protocol",
    "logging.otlp_headers",
    "logging.tracing_sample_ratio",
};

// Flags that are not configuration.
bool IsCommandOnly(absl::string_view flag) {
  return flag == "config_file" || flag == "print_config";
}

// This service's flags (those defined in flags.cc), by name.
absl::flat_hash_map<std::string, absl::CommandLineFlag*> OwnFlags() {
  absl::flat_hash_map<std::string, absl::CommandLineFlag*> own;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    if (IsServerFlag(*flag) && !IsCommandOnly(name)) {
      own.emplace(std::string(name), flag);
    }
  }
  return own;
}

// A value as found, before it is read as its flag's type.
struct RawValue {
  enum Kind { kString, kInteger, kFloat, kBool, kList, kTable, kOther };
  Kind kind = kString;
  std::string text;                // Scalars' text.
  std::vector<std::string> items;  // kList's strings.
  bool from_env = false;           // Untyped text of an environment variable.
};

const char* KindName(RawValue::Kind kind) {
  switch (kind) {
    case RawValue::kString:
      return "a string";
    case RawValue::kInteger:
      return "an integer";
    case RawValue::kFloat:
      return "a float";
    case RawValue::kBool:
      return "a boolean";
    case RawValue::kList:
      return "a list";
    case RawValue::kTable:
      return "a table";
    default:
      return "another type";
  }
}

// `raw` as the value `flag` parses; kInvalidArgument naming `source`.
absl::StatusOr<std::string> ToFlagValue(const absl::CommandLineFlag& flag,
                                        const RawValue& raw,
                                        const std::string& source) {
  auto wrong = [&](const char* expected) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, ": expected ", expected, ", got ",
        raw.from_env ? absl::StrCat("'", raw.text, "'") : KindName(raw.kind)));
  };
  const bool text = raw.from_env || raw.kind == RawValue::kString;
  if (flag.IsOfType<std::vector<std::string>>()) {
    if (raw.kind == RawValue::kList) return absl::StrJoin(raw.items, ",");
    if (text) return raw.text;
    return wrong("a list of strings");
  }
  if (flag.IsOfType<std::string>()) {
    if (text) return raw.text;
    return wrong("a string");
  }
  if (flag.IsOfType<absl::Duration>()) {
    if (!text) return wrong("a duration such as \"3s\" or \"500ms\"");
    absl::StatusOr<absl::Duration> d = ParseHumanDuration(raw.text);
    if (!d.ok()) return wrong("a duration such as \"3s\" or \"500ms\"");
    return absl::FormatDuration(*d);
  }
  if (flag.IsOfType<bool>()) {
    if (raw.kind == RawValue::kBool || raw.from_env) return raw.text;
    return wrong("a boolean");
  }
  if (flag.IsOfType<int>() || flag.IsOfType<uint64_t>()) {
    if (raw.kind == RawValue::kInteger && !raw.from_env) return raw.text;
    if (!text) return wrong("an integer or a size such as \"4MiB\"");
    absl::StatusOr<uint64_t> n = ParseReadableSize(raw.text);
    if (!n.ok()) return wrong("an integer or a size such as \"4MiB\"");
    return absl::StrCat(*n);
  }
  return wrong("a value this flag takes");
}

// Where a key goes.
struct Resolution {
  const absl::CommandLineFlag* flag = nullptr;  // The flag, if any.
  std::string note;  // Why it is ignored, when there is no flag.
};

Resolution Resolve(
    const std::string& path,
    const absl::flat_hash_map<std::string, absl::CommandLineFlag*>& own) {
  Resolution r;
  for (const auto& [key, flag] : kGreptimeKeys) {
    if (path == key) {
      r.flag = absl::FindCommandLineFlag(flag);
      return r;
    }
  }
  if (path.find('.') == std::string::npos) {
    auto it = own.find(path);
    if (it != own.end()) {
      r.flag = it->second;
      return r;
    }
  }
  const std::string section = path.substr(0, path.find('.'));
  for (const char* ignored : kIgnoredGreptimeKeys) {
    if (path == ignored || section == ignored) {
      r.note = "a GreptimeDB metasrv key with no meaning here; ignored";
      return r;
    }
  }
  r.note = "unknown key; ignored";
  return r;
}

// Adds `raw` for `path` to `out`, or a note; an error for a bad value.
absl::Status Take(
    const std::string& path, const RawValue& raw, const std::string& source,
    const absl::flat_hash_map<std::string, absl::CommandLineFlag*>& own,
    ConfigValues* out) {
  Resolution r = Resolve(path, own);
  if (r.flag == nullptr) {
    out->notes.push_back(absl::StrCat(source, ": ", r.note));
    return absl::OkStatus();
  }
  absl::StatusOr<std::string> value = ToFlagValue(*r.flag, raw, source);
  if (!value.ok()) return value.status();
  out->assignments.push_back(
      {std::string(r.flag->Name()), *std::move(value), source});
  return absl::OkStatus();
}

RawValue FromToml(const toml::node& node) {
  RawValue raw;
  if (auto s = node.value<std::string>(); s && node.is_string()) {
    raw.kind = RawValue::kString;
    raw.text = *s;
  } else if (node.is_integer()) {
    raw.kind = RawValue::kInteger;
    raw.text = absl::StrCat(*node.value<int64_t>());
  } else if (node.is_floating_point()) {
    raw.kind = RawValue::kFloat;
    raw.text = absl::StrCat(*node.value<double>());
  } else if (node.is_boolean()) {
    raw.kind = RawValue::kBool;
    raw.text = *node.value<bool>() ? "true" : "false";
  } else if (const toml::array* a = node.as_array()) {
    raw.kind = RawValue::kList;
    for (const toml::node& item : *a) {
      if (!item.is_string()) {
        raw.kind = RawValue::kOther;
        break;
      }
      raw.items.push_back(*item.value<std::string>());
    }
  } else if (node.is_table()) {
    raw.kind = RawValue::kTable;
  } else {
    raw.kind = RawValue::kOther;
  }
  return raw;
}

}  // namespace

absl::Status CheckReadableConfig(const std::string& path, const char* what) {
  if (path.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": the path is empty"));
  }
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    return absl::NotFoundError(absl::StrCat(what, " ", path, ": ",
                                            std::strerror(errno)));
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " ", path, " is not a regular file"));
  }
  if (st.st_size > kMaxConfigBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " ", path, " has ", st.st_size,
                     " bytes, more than ", kMaxConfigBytes));
  }
  return absl::OkStatus();
}

namespace {

// Sections nest at most this deep: GreptimeDB's file goes two levels deep,
// and a deeper file is refused before its walk could exhaust the stack.
constexpr int kMaxTableDepth = 8;

absl::Status WalkTable(
    const toml::table& table, const std::string& prefix,
    const std::string& file,
    const absl::flat_hash_map<std::string, absl::CommandLineFlag*>& own,
    ConfigValues* out, int depth = 1) {
  if (depth > kMaxTableDepth) {
    return absl::InvalidArgumentError(absl::StrCat(
        "config file ", file, ": sections nest deeper than ", kMaxTableDepth,
        " levels (", prefix.substr(0, 64), "...); no setting is that deep"));
  }
  for (const auto& [key, node] : table) {
    const std::string path =
        prefix.empty() ? std::string(key.str())
                       : absl::StrCat(prefix, ".", std::string(key.str()));
    const std::string source = absl::StrCat(file, ": ", path);
    if (const toml::table* sub = node.as_table()) {
      Resolution r = Resolve(path, own);
      if (r.flag != nullptr) {
        // A setting given as a table would be silently ignored.
        return absl::InvalidArgumentError(absl::StrCat(
            source, ": expects a value for --", r.flag->Name(),
            ", not a table"));
      }
      if (!r.note.empty() && r.note.find("unknown") == std::string::npos) {
        out->notes.push_back(absl::StrCat(source, ": ", r.note));
        continue;  // A whole section with no meaning here.
      }
      absl::Status s = WalkTable(*sub, path, file, own, out, depth + 1);
      if (!s.ok()) return s;
      continue;
    }
    absl::Status s = Take(path, FromToml(node), source, own, out);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace

namespace {

// How deep the deepest table header or dotted key of `text` names a value:
// its dots outside quotes, plus one. toml++ parses (and destroys) nested
// tables recursively, so a file of thousands of levels must be refused
// before it is parsed, not after.
int DeepestKeyPath(absl::string_view text) {
  int deepest = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    line = absl::StripLeadingAsciiWhitespace(line);
    if (line.empty() || line.front() == '#') continue;
    // A header runs to its ']', a key to its '='.
    const char end = line.front() == '[' ? ']' : '=';
    int depth = 1;
    char quote = 0;
    for (const char c : line) {
      if (quote != 0) {
        if (c == quote) quote = 0;
      } else if (c == '"' || c == '\'') {
        quote = c;
      } else if (c == '.') {
        ++depth;
      } else if (c == end) {
        break;
      }
    }
    deepest = std::max(deepest, depth);
  }
  return deepest;
}

}  // namespace

absl::StatusOr<ConfigValues> LoadConfigFile(const std::string& path) {
  absl::Status readable = CheckReadableConfig(path, "config file");
  if (!readable.ok()) return readable;
  {
    std::ifstream in(path, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    const int depth = DeepestKeyPath(text.str());
    if (depth > kMaxTableDepth) {
      return absl::InvalidArgumentError(absl::StrCat(
          "config file ", path, ": keys nest ", depth,
          " levels deep, deeper than ", kMaxTableDepth,
          "; no setting is that deep"));
    }
  }
  toml::parse_result parsed = toml::parse_file(path);
  if (!parsed) {
    const toml::parse_error& e = parsed.error();
    const std::string what(e.description());
    if (!e.source().begin) {
      return absl::NotFoundError(
          absl::StrCat("config file ", path, ": ", what));
    }
    return absl::InvalidArgumentError(
        absl::StrCat("config file ", path, ":", e.source().begin.line, ":",
                     e.source().begin.column, ": ", what));
  }
  ConfigValues out;
  absl::Status s = WalkTable(parsed.table(), "", path, OwnFlags(), &out);
  if (!s.ok()) return s;
  // Two names of one setting (GreptimeDB's and ours) that disagree: which
  // one the operator meant cannot be known.
  absl::flat_hash_map<std::string, const FlagAssignment*> seen;
  for (const FlagAssignment& a : out.assignments) {
    auto [it, fresh] = seen.emplace(a.flag, &a);
    if (!fresh && it->second->value != a.value) {
      return absl::InvalidArgumentError(absl::StrCat(
          it->second->source, " and ", a.source, " both set --", a.flag,
          ", to different values"));
    }
  }
  return out;
}

absl::StatusOr<ConfigValues> LoadConfigEnv(
    const std::vector<std::string>& env) {
  const auto own = OwnFlags();
  ConfigValues out;
  for (const std::string& entry : env) {
    if (!absl::StartsWith(entry, kEnvPrefix)) continue;
    const size_t eq = entry.find('=');
    if (eq == std::string::npos || eq + 1 == entry.size()) continue;
    const std::string name = entry.substr(0, eq);
    const std::string path = absl::AsciiStrToLower(absl::StrReplaceAll(
        name.substr(sizeof(kEnvPrefix) - 1), {{"__", "."}}));
    RawValue raw;
    raw.from_env = true;
    raw.text = entry.substr(eq + 1);
    absl::Status s =
        Take(path, raw, absl::StrCat("environment ", name), own, &out);
    if (!s.ok()) return s;
  }
  return out;
}

absl::Status ApplyAssignments(const std::vector<FlagAssignment>& assignments) {
  for (const FlagAssignment& a : assignments) {
    absl::CommandLineFlag* flag = absl::FindCommandLineFlag(a.flag);
    std::string error;
    if (flag == nullptr || !flag->ParseFrom(a.value, &error)) {
      return absl::InvalidArgumentError(
          absl::StrCat(a.source, ": bad value '", a.value, "': ", error));
    }
  }
  return absl::OkStatus();
}

namespace {

// `d` in the largest unit it is a whole number of.
std::string WholeUnits(absl::Duration d) {
  if (d == absl::ZeroDuration()) return "0s";
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

// Puts `flag`'s current value at dotted `path` of `root`.
void Put(toml::table& root, const std::string& path,
         const absl::CommandLineFlag& flag) {
  toml::table* table = &root;
  std::string key = path;
  if (const size_t dot = path.find('.'); dot != std::string::npos) {
    const std::string section = path.substr(0, dot);
    key = path.substr(dot + 1);
    if (!root.contains(section)) root.insert(section, toml::table{});
    table = root[section].as_table();
  }
  const std::string current = flag.CurrentValue();
  if (flag.IsOfType<std::vector<std::string>>()) {
    toml::array items;
    for (absl::string_view s : absl::StrSplit(current, ',', absl::SkipEmpty()))
      items.push_back(std::string(s));
    table->insert_or_assign(key, std::move(items));
  } else if (flag.IsOfType<absl::Duration>()) {
    absl::Duration d;
    table->insert_or_assign(
        key, absl::ParseDuration(current, &d) ? WholeUnits(d) : current);
  } else if (flag.IsOfType<bool>()) {
    table->insert_or_assign(key, current == "true");
  } else if (flag.IsOfType<int>() || flag.IsOfType<uint64_t>()) {
    int64_t n = 0;
    if (absl::SimpleAtoi(current, &n)) {
      table->insert_or_assign(key, n);
    } else {
      table->insert_or_assign(key, current);
    }
  } else {
    table->insert_or_assign(key, current);
  }
}

}  // namespace

std::string EffectiveConfigToml() {
  toml::table root;
  const auto own = OwnFlags();
  std::vector<std::string> mapped;
  for (const auto& [key, flag] : kGreptimeKeys) {
    mapped.emplace_back(flag);
    Put(root, key, *absl::FindCommandLineFlag(flag));
  }
  for (const auto& [name, flag] : own) {
    if (std::find(mapped.begin(), mapped.end(), name) == mapped.end()) {
      Put(root, name, *flag);
    }
  }
  std::ostringstream out;
  out << root << "\n";
  return out.str();
}

absl::StatusOr<absl::Duration> ParseHumanDuration(const std::string& text) {
  const absl::string_view s = absl::StripAsciiWhitespace(text);
  if (s == "0") return absl::ZeroDuration();
  const std::pair<const char*, absl::Duration> units[] = {
      {"nanoseconds", absl::Nanoseconds(1)},
      {"nanosecond", absl::Nanoseconds(1)},
      {"nsec", absl::Nanoseconds(1)},
      {"ns", absl::Nanoseconds(1)},
      {"microseconds", absl::Microseconds(1)},
      {"microsecond", absl::Microseconds(1)},
      {"usec", absl::Microseconds(1)},
      {"us", absl::Microseconds(1)},
      {"milliseconds", absl::Milliseconds(1)},
      {"millisecond", absl::Milliseconds(1)},
      {"millis", absl::Milliseconds(1)},
      {"msec", absl::Milliseconds(1)},
      {"ms", absl::Milliseconds(1)},
      {"seconds", absl::Seconds(1)},
      {"second", absl::Seconds(1)},
      {"secs", absl::Seconds(1)},
      {"sec", absl::Seconds(1)},
      {"s", absl::Seconds(1)},
      {"minutes", absl::Minutes(1)},
      {"minute", absl::Minutes(1)},
      {"mins", absl::Minutes(1)},
      {"min", absl::Minutes(1)},
      {"m", absl::Minutes(1)},
      {"hours", absl::Hours(1)},
      {"hour", absl::Hours(1)},
      {"hrs", absl::Hours(1)},
      {"hr", absl::Hours(1)},
      {"h", absl::Hours(1)},
      {"days", absl::Hours(24)},
      {"day", absl::Hours(24)},
      {"d", absl::Hours(24)},
      {"weeks", absl::Hours(24 * 7)},
      {"week", absl::Hours(24 * 7)},
      {"w", absl::Hours(24 * 7)},
  };
  auto bad = [&] {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", text, "' is not a duration (such as 3s, 500ms, 24hours)"));
  };
  absl::Duration total;
  size_t i = 0;
  if (s.empty()) return bad();
  while (i < s.size()) {
    while (i < s.size() && s[i] == ' ') ++i;
    const size_t num_start = i;
    while (i < s.size() && (absl::ascii_isdigit(s[i]) || s[i] == '.')) ++i;
    double n = 0;
    if (i == num_start ||
        !absl::SimpleAtod(s.substr(num_start, i - num_start), &n)) {
      return bad();
    }
    while (i < s.size() && s[i] == ' ') ++i;
    const size_t unit_start = i;
    while (i < s.size() && absl::ascii_isalpha(s[i])) ++i;
    const absl::string_view unit = s.substr(unit_start, i - unit_start);
    bool found = false;
    for (const auto& [name, size] : units) {
      if (unit == name) {
        total += size * n;
        found = true;
        break;
      }
    }
    if (!found) return bad();
  }
  return total;
}

absl::StatusOr<uint64_t> ParseReadableSize(const std::string& text) {
  const absl::string_view s = absl::StripAsciiWhitespace(text);
  size_t i = 0;
  while (i < s.size() && (absl::ascii_isdigit(s[i]) || s[i] == '.' ||
                          s[i] == 'e' || s[i] == 'E' || s[i] == '+')) {
    ++i;
  }
  double n = 0;
  const absl::string_view unit = absl::StripAsciiWhitespace(s.substr(i));
  const std::pair<const char*, double> units[] = {
      {"", 1},         {"B", 1},        {"K", 0x1p10},   {"KB", 0x1p10},
      {"KiB", 0x1p10}, {"M", 0x1p20},   {"MB", 0x1p20},  {"MiB", 0x1p20},
      {"G", 0x1p30},   {"GB", 0x1p30},  {"GiB", 0x1p30}, {"T", 0x1p40},
      {"TB", 0x1p40},  {"TiB", 0x1p40}, {"P", 0x1p50},   {"PB", 0x1p50},
      {"PiB", 0x1p50}};
  if (i > 0 && absl::SimpleAtod(s.substr(0, i), &n) && n >= 0) {
    for (const auto& [name, factor] : units) {
      const double bytes = n * factor;
      if (unit == name && bytes < 0x1p63) return static_cast<uint64_t>(bytes);
    }
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "'", text, "' is not a size (such as 4194304, 512KiB, 4MB)"));
}

}  // namespace metasrv::server
