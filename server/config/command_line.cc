#include "server/config/command_line.h"

#include <cstdio>
#include <fstream>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "server/config/checked_options.h"
#include "server/config/config_file.h"
#include "server/config/settings.h"
#include "server/ops/build_info.h"
#include "server/ops/logging.h"
#include "server/ops/small_file.h"

namespace metasrv::server {
namespace {

// Options that are not settings: they say what the binary does.
struct CommandOption {
  const char* name;  // --name.
  const char* help;  // For --helpfull and the README.
};
constexpr CommandOption kCommandOptions[] = {
    {"config_file",
     "TOML config file (GreptimeDB's metasrv key names; also -c FILE). "
     "Precedence: flags > GREPTIMEDB_METASRV__* environment > file"},
    {"print_config",
     "check the configuration, print it as TOML (passwords masked) and "
     "exit: 0, or 2 for a configuration that cannot work"},
    {"check_config",
     "check the configuration and exit (0 or 2), printing it as "
     "--print_config does and one line of the keys ignored; a key neither "
     "this service nor GreptimeDB knows (a misspelling) fails it"},
    {"flagfile", "read flags from FILE, one --name=value per line"},
};

void PrintSetting(const Setting& s) {
  std::printf("  --%s (default \"%s\")\n      %s\n      %s: %s; env %s\n",
              s.name(), SettingText(s.Get(ServerOptions{})).c_str(), s.help(),
              s.greptime_key() ? "GreptimeDB key" : "key", s.key().c_str(),
              s.env().c_str());
}

// Every setting, in the table's order, then the command options.
void PrintAllFlags() {
  std::printf("metasrv flags:\n");
  for (const std::unique_ptr<Setting>& s : Settings()) PrintSetting(*s);
  std::printf("\ncommand options:\n");
  for (const CommandOption& o : kCommandOptions) {
    std::printf("  --%s (default \"\")\n      %s\n", o.name, o.help);
  }
}

void PrintHelp() {
  std::printf(
      "metasrv: the flow-state metadata service for GreptimeDB flownodes.\n\n"
      "Usage: metasrv [-c FILE] [--flag=value ...]\n\n"
      "Main flags:\n");
  for (const std::unique_ptr<Setting>& s : Settings()) {
    if (s->brief()) PrintSetting(*s);
  }
  std::printf(
      "\nConfiguration comes from, highest first: flags (and --flagfile), "
      "GREPTIMEDB_METASRV__*\nenvironment variables (e.g. "
      "GREPTIMEDB_METASRV__GRPC__BIND_ADDR), the TOML file of\n-c FILE "
      "(GreptimeDB's metasrv key names), defaults. --print_config shows "
      "the\nresult. --helpfull lists every flag; --version prints the "
      "version.\n\nExit codes: 0 stopped cleanly (or help, version), 1 "
      "could not start or serve,\n2 bad arguments, flags or config.\n");
}

// Whether errors before start are written as JSON lines: --log_format=json
// was asked for on the command line or in the environment (or by the config
// file, once it was read). Set once by ReadCommandLine, which runs before
// any other thread.
bool json_errors = false;

void NoteLogFormat(absl::string_view format) {
  if (format == "json") json_errors = true;
}

// Writes one line to stderr before logging is set up: as the log's JSON
// lines are shaped (ops/logging) when json_errors, else "metasrv: text".
void Say(const char* level, const std::string& text) {
  if (json_errors) {
    std::fprintf(stderr, "{\"time\":\"%s\",\"level\":\"%s\",\"msg\":\"%s\"}\n",
                 absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::Now(),
                                  absl::UTCTimeZone())
                     .c_str(),
                 level, JsonEscape(text).c_str());
  } else {
    std::fprintf(stderr, "metasrv: %s\n", text.c_str());
  }
}

int UsageError(const std::string& message) {
  Say("error", absl::StrCat(message, " (see metasrv --help)"));
  return kExitUsage;
}

// Looks for --log_format=json (or "--log_format json") and
// GREPTIMEDB_METASRV__LOGGING__LOG_FORMAT=json before anything is parsed.
void ScanForJson(const std::vector<std::string>& args,
                 const std::vector<std::string>& env) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--log_format=json" || args[i] == "-log_format=json" ||
        ((args[i] == "--log_format" || args[i] == "-log_format") &&
         i + 1 < args.size() && args[i + 1] == "json")) {
      json_errors = true;
    }
  }
  for (const std::string& e : env) {
    if (e == "GREPTIMEDB_METASRV__LOGGING__LOG_FORMAT=json") json_errors = true;
  }
}

// What argv says, read.
struct Parsed {
  std::vector<ConfigAssignment> settings;  // In order.
  std::string config_file;                 // -c; empty: none.
  bool config_file_given = false;          // Whether -c was given.
  bool print_config = false;               // --print_config.
  bool check_config = false;               // --check_config.
};

// The exit code for --help, --helpfull and --version; -1 for anything else.
int Informational(const std::string& a) {
  if (a == "-h" || a == "--help" || a == "-help") {
    PrintHelp();
    return kExitOk;
  }
  if (a == "--helpfull" || a == "-helpfull") {
    PrintAllFlags();
    return kExitOk;
  }
  if (a == "--version" || a == "-version") {
    std::printf("%s\n", VersionLine().c_str());
    return kExitOk;
  }
  return -1;
}

// One `--name[=value]` (its value perhaps the next argument, at `*i`) into
// `out`; an exit code on error, else -1.
int TakeArgument(const std::vector<std::string>& args, size_t* i, Parsed* out) {
  const std::string& a = args[*i];
  const std::string body = a.substr(a[1] == '-' ? 2 : 1);
  const size_t eq = body.find('=');
  const std::string name = body.substr(0, eq);
  if (name == "print_config" || name == "check_config") {
    const std::string value =
        eq == std::string::npos ? "true" : body.substr(eq + 1);
    if (value != "true" && value != "false") {
      return UsageError(absl::StrCat("--", name, " takes no value"));
    }
    (name == "print_config" ? out->print_config : out->check_config) =
        value == "true";
    return -1;
  }
  const Setting* setting = FindSetting(name);
  if (setting == nullptr && name != "config_file") {
    return UsageError(absl::StrCat("unknown flag --", name));
  }
  std::string value;
  if (eq != std::string::npos) {
    value = body.substr(eq + 1);
  } else if (*i + 1 < args.size()) {
    value = args[++*i];
  } else {
    return UsageError(absl::StrCat("--", name, " needs a value"));
  }
  if (setting == nullptr) {
    out->config_file = value;
    out->config_file_given = true;
    return -1;
  }
  SettingInput input;
  input.text = std::move(value);
  out->settings.push_back(
      {setting, std::move(input), absl::StrCat("--", name)});
  return -1;
}

// Reads `args` (flag files expanded) into `out`. An exit code when it
// cannot, or for --help and --version; -1 otherwise.
int Parse(const std::vector<std::string>& args, Parsed* out) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (const int code = Informational(args[i]); code >= 0) return code;
    if (args[i] == "-c" || absl::StartsWith(args[i], "-c=")) {
      if (args[i] == "-c" && i + 1 == args.size()) {
        return UsageError("-c needs a file");
      }
      out->config_file = args[i] == "-c" ? args[++i] : args[i].substr(3);
      out->config_file_given = true;
      continue;
    }
    if (args[i] == "--") {
      if (i + 1 < args.size()) {
        return UsageError(
            absl::StrCat("unexpected argument '", args[i + 1], "'"));
      }
      break;
    }
    if (args[i].size() < 2 || args[i][0] != '-') {
      return UsageError(absl::StrCat("unexpected argument '", args[i], "'"));
    }
    if (const int code = TakeArgument(args, &i, out); code >= 0) return code;
  }
  return -1;
}

// `args`, each --flagfile=FILE replaced by the flags in FILE (one per line;
// blank lines and lines starting with # skipped), so that the flags in a
// file are read like those on the command line.
absl::StatusOr<std::vector<std::string>> ExpandFlagfiles(
    const std::vector<std::string>& args, int depth = 0) {
  std::vector<std::string> out;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string files;
    if (absl::StartsWith(args[i], "--flagfile=")) {
      files = args[i].substr(sizeof("--flagfile=") - 1);
    } else if (args[i] == "--flagfile" && i + 1 < args.size()) {
      files = args[++i];
    } else {
      out.push_back(args[i]);
      continue;
    }
    if (depth > 8) {
      return absl::InvalidArgumentError("--flagfile nests too deep");
    }
    for (absl::string_view file :
         absl::StrSplit(files, ',', absl::SkipEmpty())) {
      absl::StatusOr<std::string> text =
          ReadSmallFile(std::string(file), "--flagfile");
      if (!text.ok()) return text.status();
      std::vector<std::string> lines;
      for (absl::string_view line : absl::StrSplit(*text, '\n')) {
        const absl::string_view trimmed = absl::StripAsciiWhitespace(line);
        if (!trimmed.empty() && trimmed[0] != '#') lines.emplace_back(trimmed);
      }
      absl::StatusOr<std::vector<std::string>> nested =
          ExpandFlagfiles(lines, depth + 1);
      if (!nested.ok()) return nested.status();
      out.insert(out.end(), nested->begin(), nested->end());
    }
  }
  return out;
}

// Applies the sources to `result->options`, lowest first.
int ApplySources(const Parsed& parsed, const std::vector<std::string>& env,
                 CommandLine* result) {
  std::vector<ConfigValues> sources;
  if (parsed.config_file_given) {
    absl::StatusOr<ConfigValues> file = LoadConfigFile(parsed.config_file);
    if (!file.ok()) return UsageError(std::string(file.status().message()));
    sources.push_back(*std::move(file));
  }
  absl::StatusOr<ConfigValues> environment = LoadConfigEnv(env);
  if (!environment.ok()) {
    return UsageError(std::string(environment.status().message()));
  }
  sources.push_back(*std::move(environment));
  ConfigValues command_line;
  command_line.assignments = parsed.settings;
  sources.push_back(std::move(command_line));
  // Which source set each setting last, to say which values were replaced.
  absl::flat_hash_map<const Setting*, std::string> set_by;
  for (const ConfigValues& source : sources) {
    for (const ConfigAssignment& assignment : source.assignments) {
      auto [at, first] = set_by.try_emplace(assignment.setting,
                                            assignment.source);
      if (!first && at->second != assignment.source) {
        result->overridden.push_back(
            absl::StrCat(assignment.setting->name(), ": ", at->second,
                         " is overridden by ", assignment.source));
        at->second = assignment.source;
      }
    }
    absl::Status applied =
        ApplyAssignments(source.assignments, &result->options);
    NoteLogFormat(result->options.log_format);
    if (!applied.ok()) return UsageError(std::string(applied.message()));
  }
  result->ignored_keys = IgnoredKeysSummary(sources);
  for (const ConfigValues& source : sources) {
    result->unknown_keys.insert(result->unknown_keys.end(),
                                source.unknown_keys.begin(),
                                source.unknown_keys.end());
  }
  return -1;
}

// Keys neither this service nor GreptimeDB knows (a misspelling such as
// `[grpc] bind_adr`): their settings would stay at their defaults.
std::string UnknownKeysError(const std::vector<std::string>& keys) {
  return absl::StrCat(keys.size(),
                      " key(s) neither this service nor GreptimeDB knows: ",
                      absl::StrJoin(keys, ", "), " (misspelled?)");
}

// --print_config and --check_config: the options checked, printed (masked);
// the exit code.
int PrintChecked(const Parsed& parsed, const CommandLine& result) {
  absl::StatusOr<CheckedOptions> checked = CheckOptions(result.options);
  if (!checked.ok()) {
    return UsageError(std::string(checked.status().message()));
  }
  std::printf("%s%s", EffectiveConfigToml(checked->options()).c_str(),
              SilenceRules(checked->options()).c_str());
  if (!result.ignored_keys.empty()) {
    Say("warning", absl::StrCat("config: ", result.ignored_keys));
  }
  for (const std::string& line : checked->cautions()) {
    Say("warning", absl::StrCat("config: ", line));
  }
  if (parsed.check_config && !result.unknown_keys.empty()) {
    // A deploy step must not pass a file whose misspelled key leaves a
    // setting at its default. GreptimeDB's own keys with no meaning here
    // stay a note (upstream's example file passes).
    return UsageError(
        absl::StrCat("--check_config: ", UnknownKeysError(result.unknown_keys)));
  }
  if (parsed.check_config) {
    Say("info", "the configuration can work");
  }
  return kExitOk;
}

}  // namespace

std::string VersionLine() {
  const BuildInfo build = GetBuildInfo();
  return absl::StrCat("metasrv ", build.version, " (commit ", build.commit,
                      ", ", build.build_type, " build)");
}

CommandLine ReadCommandLine(int argc, char** argv,
                            const std::vector<std::string>& env,
                            bool json_logs) {
  CommandLine result;
  json_errors = json_logs;
  ScanForJson(std::vector<std::string>(argv + 1, argv + argc), env);
  absl::StatusOr<std::vector<std::string>> args =
      ExpandFlagfiles(std::vector<std::string>(argv + 1, argv + argc));
  if (!args.ok()) {
    result.exit_code = UsageError(std::string(args.status().message()));
    return result;
  }
  ScanForJson(*args, env);  // Also what the flag files say.
  Parsed parsed;
  result.exit_code = Parse(*args, &parsed);
  if (result.exit_code >= 0) return result;
  result.exit_code = ApplySources(parsed, env, &result);
  if (result.exit_code >= 0) return result;
  if (parsed.print_config || parsed.check_config) {
    result.exit_code = PrintChecked(parsed, result);
  } else if (!result.unknown_keys.empty()) {
    // The server starts (or reloads) only from what --check_config passes:
    // a misspelled key would leave its setting at the default unseen.
    result.exit_code = UsageError(absl::StrCat(
        "config: ", UnknownKeysError(result.unknown_keys),
        "; the server does not start with them (--check_config names them "
        "too; GreptimeDB's own keys are only noted)"));
  }
  return result;
}

}  // namespace metasrv::server
