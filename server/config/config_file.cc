#include "server/config/config_file.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <utility>

#define TOML_HEADER_ONLY 1
#define TOML_EXCEPTIONS 0
#include <toml++/toml.h>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "server/config/settings.h"
#include "server/ops/small_file.h"

namespace metasrv::server {
namespace {

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
    "logging.enable_otlp_tracing",
    "logging.otlp_endpoint",
    "logging.append_stdout",
    "logging.otlp_export_protocol",
    "logging.otlp_headers",
    "logging.tracing_sample_ratio",
};

// GreptimeDB keys this service does not read, because its own setting of a
// different default takes their place: the note says which.
constexpr std::pair<const char*, const char*> kReplacedGreptimeKeys[] = {
    {"grpc.max_recv_message_size",
     "GreptimeDB's request limit (512 MB by default upstream) is not read "
     "here: --max_message_bytes (4 MiB by default) bounds every request, "
     "inflated; ignored"},
};

// Where a key goes.
struct Resolution {
  const Setting* setting = nullptr;  // The setting, if any.
  std::string note;      // Why it is ignored, when there is no setting.
  bool unknown = false;  // Neither ours nor GreptimeDB's.
};

Resolution Resolve(const std::string& path) {
  Resolution r;
  r.setting = FindSettingByKey(path);
  if (r.setting != nullptr) return r;
  for (const auto& [key, note] : kReplacedGreptimeKeys) {
    if (path == key) {
      r.note = note;
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
  r.unknown = true;
  return r;
}

// Records an ignored key.
void Note(const std::string& path, const std::string& source,
          const Resolution& r, ConfigValues* out) {
  out->notes.push_back(absl::StrCat(source, ": ", r.note));
  (r.unknown ? out->unknown_keys : out->greptime_keys).push_back(path);
}

// Adds `input` for `path` to `out`, or a note; an error for a bad value.
absl::Status Take(const std::string& path, SettingInput input,
                  const std::string& source, ConfigValues* out) {
  Resolution r = Resolve(path);
  if (r.setting == nullptr) {
    Note(path, source, r, out);
    return absl::OkStatus();
  }
  // Read now, so that a wrong type is reported with its source at once.
  ServerOptions scratch;
  if (absl::Status s = r.setting->Set(input, source, &scratch); !s.ok()) {
    return s;
  }
  out->assignments.push_back({r.setting, std::move(input), source});
  return absl::OkStatus();
}

SettingInput FromToml(const toml::node& node) {
  SettingInput raw;
  if (auto s = node.value<std::string>(); s && node.is_string()) {
    raw.kind = SettingInput::kString;
    raw.text = *s;
  } else if (node.is_integer()) {
    raw.kind = SettingInput::kInteger;
    raw.text = absl::StrCat(*node.value<int64_t>());
  } else if (node.is_floating_point()) {
    raw.kind = SettingInput::kFloat;
    raw.text = absl::StrCat(*node.value<double>());
  } else if (node.is_boolean()) {
    raw.kind = SettingInput::kBool;
    raw.text = *node.value<bool>() ? "true" : "false";
  } else if (const toml::array* a = node.as_array()) {
    raw.kind = SettingInput::kList;
    for (const toml::node& item : *a) {
      if (!item.is_string()) {
        raw.kind = SettingInput::kOther;
        break;
      }
      raw.items.push_back(*item.value<std::string>());
    }
  } else if (node.is_table()) {
    raw.kind = SettingInput::kTable;
  } else {
    raw.kind = SettingInput::kOther;
  }
  return raw;
}

}  // namespace

namespace {

// Sections nest at most this deep: GreptimeDB's file goes two levels deep,
// and a deeper file is refused before its walk could exhaust the stack.
constexpr int kMaxTableDepth = 8;

absl::Status WalkTable(const toml::table& table, const std::string& prefix,
                       const std::string& file, ConfigValues* out,
                       int depth = 1) {
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
      Resolution r = Resolve(path);
      if (r.setting != nullptr) {
        // A setting given as a table would be silently ignored.
        return absl::InvalidArgumentError(
            absl::StrCat(source, ": expects a value for --", r.setting->name(),
                         ", not a table"));
      }
      if (!r.unknown) {
        Note(path, source, r, out);
        continue;  // A whole section with no meaning here.
      }
      absl::Status s = WalkTable(*sub, path, file, out, depth + 1);
      if (!s.ok()) return s;
      continue;
    }
    absl::Status s = Take(path, FromToml(node), source, out);
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
      return absl::InvalidArgumentError(
          absl::StrCat("config file ", path, ": keys nest ", depth,
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
  absl::Status s = WalkTable(parsed.table(), "", path, &out);
  if (!s.ok()) return s;
  // Two names of one setting (GreptimeDB's and ours) that disagree: which
  // one the operator meant cannot be known.
  absl::flat_hash_map<const Setting*, std::pair<std::string, std::string>>
      seen;  // Setting -> its value's text and source.
  for (const ConfigAssignment& a : out.assignments) {
    ServerOptions scratch;
    a.setting->Set(a.input, a.source, &scratch).IgnoreError();  // Took it.
    const std::string value = SettingText(a.setting->Get(scratch));
    auto [it, fresh] = seen.emplace(a.setting, std::make_pair(value, a.source));
    if (!fresh && it->second.first != value) {
      return absl::InvalidArgumentError(
          absl::StrCat(it->second.second, " and ", a.source, " both set --",
                       a.setting->name(), ", to different values"));
    }
  }
  return out;
}

absl::StatusOr<ConfigValues> LoadConfigEnv(
    const std::vector<std::string>& env) {
  ConfigValues out;
  for (const std::string& entry : env) {
    if (!absl::StartsWith(entry, kEnvPrefix)) continue;
    const size_t eq = entry.find('=');
    if (eq == std::string::npos || eq + 1 == entry.size()) continue;
    const std::string name = entry.substr(0, eq);
    const std::string path = absl::AsciiStrToLower(absl::StrReplaceAll(
        name.substr(sizeof(kEnvPrefix) - 1), {{"__", "."}}));
    SettingInput raw;
    raw.text = entry.substr(eq + 1);
    absl::Status s = Take(path, raw, absl::StrCat("environment ", name), &out);
    if (!s.ok()) return s;
  }
  return out;
}

absl::Status ApplyAssignments(const std::vector<ConfigAssignment>& assignments,
                              ServerOptions* options) {
  for (const ConfigAssignment& a : assignments) {
    if (absl::Status s = a.setting->Set(a.input, a.source, options); !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

std::string EffectiveConfigToml(const ServerOptions& options) {
  toml::table root;
  for (const std::unique_ptr<Setting>& setting : Settings()) {
    const std::string key = setting->key();
    toml::table* table = &root;
    std::string leaf = key;
    if (const size_t dot = key.find('.'); dot != std::string::npos) {
      const std::string section = key.substr(0, dot);
      leaf = key.substr(dot + 1);
      if (!root.contains(section)) root.insert(section, toml::table{});
      table = root[section].as_table();
    }
    const SettingValue value = setting->Get(options);
    if (const auto* n = std::get_if<int64_t>(&value)) {
      table->insert_or_assign(leaf, *n);
    } else if (const auto* items =
                   std::get_if<std::vector<std::string>>(&value)) {
      toml::array array;
      for (const std::string& item : *items) {
        array.push_back(MaskPasswords(item));
      }
      table->insert_or_assign(leaf, std::move(array));
    } else {
      table->insert_or_assign(leaf,
                              MaskPasswords(std::get<std::string>(value)));
    }
  }
  std::ostringstream out;
  out << root << "\n";
  return out.str();
}

std::string MaskPasswords(absl::string_view text) {
  std::string out(text);
  // scheme://user:PASSWORD@host
  if (const size_t scheme = out.find("://"); scheme != std::string::npos) {
    const size_t start = scheme + 3;
    const size_t end = std::min(out.find('/', start), out.size());
    const size_t at = out.rfind('@', end);
    if (at != std::string::npos && at > start) {
      const size_t colon = out.find(':', start);
      if (colon != std::string::npos && colon < at) {
        out.replace(colon + 1, at - colon - 1, "***");
      }
    }
  }
  // password=VALUE (libpq's key=value form, or a URI's query), the value
  // perhaps quoted.
  for (size_t at = out.find("password"); at != std::string::npos;
       at = out.find("password", at + 1)) {
    size_t i = at + 8;
    while (i < out.size() && out[i] == ' ') ++i;
    if (i == out.size() || out[i] != '=') continue;
    ++i;
    while (i < out.size() && out[i] == ' ') ++i;
    size_t end = i;
    if (end < out.size() && out[end] == '\'') {
      for (++end; end < out.size() && out[end] != '\''; ++end) {
        if (out[end] == '\\') ++end;
      }
      end = std::min(end + 1, out.size());
    } else {
      while (end < out.size() && out[end] != ' ' && out[end] != '&') ++end;
    }
    out.replace(i, end - i, "***");
  }
  return out;
}

std::string IgnoredKeysSummary(const std::vector<ConfigValues>& sources) {
  std::vector<std::string> unknown, greptime;
  for (const ConfigValues& source : sources) {
    unknown.insert(unknown.end(), source.unknown_keys.begin(),
                   source.unknown_keys.end());
    greptime.insert(greptime.end(), source.greptime_keys.begin(),
                    source.greptime_keys.end());
  }
  std::vector<std::string> parts;
  if (!unknown.empty()) {
    parts.push_back(absl::StrCat(unknown.size(), " unknown key(s) ignored: ",
                                 absl::StrJoin(unknown, ", ")));
  }
  if (!greptime.empty()) {
    parts.push_back(absl::StrCat(
        greptime.size(),
        " GreptimeDB metasrv key(s) with no meaning here ignored: ",
        absl::StrJoin(greptime, ", ")));
  }
  return absl::StrJoin(parts, "; ");
}

}  // namespace metasrv::server
