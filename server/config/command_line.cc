#include "server/config/command_line.h"

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/flags/usage.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "server/ops/build_info.h"
#include "server/config/config_file.h"
#include "server/config/flags.h"

namespace metasrv::server {
namespace {

// The flags --help shows, in this order.
constexpr const char* kMainFlags[] = {
    "bind_addr",        "server_addr",  "backend",    "store_addrs",
    "store_key_prefix", "metrics_addr", "tls_cert",   "tls_key",
    "admin_token_file", "log_level",    "log_format", "config_file",
    "print_config",
};

void PrintFlag(const absl::CommandLineFlag& flag) {
  std::printf("  --%s (default \"%s\")\n      %s\n",
              std::string(flag.Name()).c_str(), flag.DefaultValue().c_str(),
              flag.Help().c_str());
}

// Every flag of the server, by name.
void PrintAllFlags() {
  std::vector<const absl::CommandLineFlag*> flags;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    if (IsServerFlag(*flag)) flags.push_back(flag);
  }
  std::sort(flags.begin(), flags.end(),
            [](auto* a, auto* b) { return a->Name() < b->Name(); });
  std::printf("metasrv flags:\n");
  for (const absl::CommandLineFlag* flag : flags) PrintFlag(*flag);
}

void PrintHelp() {
  std::printf(
      "metasrv: the flow-state metadata service for GreptimeDB flownodes.\n\n"
      "Usage: metasrv [-c FILE] [--flag=value ...]\n\n"
      "Main flags:\n");
  for (const char* name : kMainFlags) {
    const absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    if (flag != nullptr) PrintFlag(*flag);
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

int UsageError(const std::string& message) {
  std::fprintf(stderr, "metasrv: %s (see metasrv --help)\n", message.c_str());
  return kExitUsage;
}

// A flag given on the command line.
struct Given {
  std::string name;   // As found (for bools, without a "no" prefix).
  std::string value;  // Its value.
};

// Normalizes `argv` into `--name=value` arguments in `out`; `given` gets
// this service's flags among them. An exit code when it cannot, or for
// --help and --version; -1 otherwise.
int Normalize(const std::vector<std::string>& argv,
              std::vector<std::string>* out, std::vector<Given>* given) {
  const int argc = static_cast<int>(argv.size());
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
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
    if (a == "-c") {
      if (i + 1 == argc) return UsageError("-c needs a file");
      a = absl::StrCat("--config_file=", argv[++i]);
    } else if (absl::StartsWith(a, "-c=")) {
      a = absl::StrCat("--config_file=", a.substr(3));
    }
    if (a == "--") {
      if (i + 1 < argc) {
        return UsageError(
            absl::StrCat("unexpected argument '", argv[i + 1], "'"));
      }
      break;
    }
    if (a.size() < 2 || a[0] != '-') {
      return UsageError(absl::StrCat("unexpected argument '", a, "'"));
    }
    const std::string body = a.substr(a[1] == '-' ? 2 : 1);
    const size_t eq = body.find('=');
    std::string name = body.substr(0, eq);
    const absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    bool negated = false;
    if (flag == nullptr && absl::StartsWith(name, "no")) {
      flag = absl::FindCommandLineFlag(name.substr(2));
      negated = flag != nullptr && flag->IsOfType<bool>();
      if (!negated) flag = nullptr;
    }
    if (flag == nullptr) {
      return UsageError(absl::StrCat("unknown flag --", name));
    }
    std::string value;
    if (negated) {
      name = name.substr(2);
      value = "false";
    } else if (eq != std::string::npos) {
      value = body.substr(eq + 1);
    } else if (flag->IsOfType<bool>()) {
      value = "true";
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      return UsageError(absl::StrCat("--", name, " needs a value"));
    }
    out->push_back(absl::StrCat("--", name, "=", value));
    if (IsServerFlag(*flag)) {
      given->push_back({name, value});
    }
  }
  return -1;
}

// argv after argv[0], each --flagfile=FILE replaced by the flags in FILE (one
// per line; blank lines and lines starting with # skipped), so that the
// flags in a file are checked like those on the command line.
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
    if (depth > 8)
      return absl::InvalidArgumentError("--flagfile nests too deep");
    for (absl::string_view file :
         absl::StrSplit(files, ',', absl::SkipEmpty())) {
      absl::Status readable = CheckReadableConfig(std::string(file), "--flagfile");
      if (!readable.ok()) return absl::InvalidArgumentError(readable.message());
      std::ifstream in{std::string(file)};
      if (!in) {
        return absl::InvalidArgumentError(
            absl::StrCat("--flagfile: cannot read ", file));
      }
      std::vector<std::string> lines;
      for (std::string line; std::getline(in, line);) {
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

}  // namespace

std::string VersionLine() {
  const BuildInfo build = GetBuildInfo();
  return absl::StrCat("metasrv ", build.version, " (commit ", build.commit,
                      ", ", build.build_type, " build)");
}

CommandLine ReadCommandLine(int argc, char** argv,
                            const std::vector<std::string>& env) {
  CommandLine result;
  std::vector<std::string> args;
  std::vector<Given> given;
  absl::StatusOr<std::vector<std::string>> expanded =
      ExpandFlagfiles(std::vector<std::string>(argv + 1, argv + argc));
  if (!expanded.ok()) {
    result.exit_code = UsageError(std::string(expanded.status().message()));
    return result;
  }
  result.exit_code = Normalize(*expanded, &args, &given);
  if (result.exit_code >= 0) return result;
  std::string config_file;
  for (const Given& g : given) {
    if (g.name == "config_file") config_file = g.value;
  }
  // Lowest first: the file, the environment; the command line last.
  std::vector<ConfigValues> sources;
  const bool file_given = std::any_of(given.begin(), given.end(), [](const Given& g) {
    return g.name == "config_file";
  });
  if (file_given) {
    absl::StatusOr<ConfigValues> file = LoadConfigFile(config_file);
    if (!file.ok()) {
      result.exit_code = UsageError(std::string(file.status().message()));
      return result;
    }
    sources.push_back(*std::move(file));
  }
  absl::StatusOr<ConfigValues> environment = LoadConfigEnv(env);
  if (!environment.ok()) {
    result.exit_code = UsageError(std::string(environment.status().message()));
    return result;
  }
  sources.push_back(*std::move(environment));
  std::vector<FlagAssignment> command_line;
  for (const Given& g : given) {
    command_line.push_back({g.name, g.value, absl::StrCat("--", g.name)});
  }
  sources.push_back({command_line, {}});
  for (const ConfigValues& source : sources) {
    absl::Status applied = ApplyAssignments(source.assignments);
    if (!applied.ok()) {
      result.exit_code = UsageError(std::string(applied.message()));
      return result;
    }
    result.notes.insert(result.notes.end(), source.notes.begin(),
                        source.notes.end());
  }
  // The flags library parses them again (--flagfile already expanded).
  std::vector<char*> parse_argv = {argv[0]};
  for (std::string& a : args) parse_argv.push_back(a.data());
  absl::SetProgramUsageMessage("metasrv [-c FILE] [--flag=value ...]");
  absl::ParseCommandLine(static_cast<int>(parse_argv.size()),
                         parse_argv.data());
  if (PrintConfigFlag()) {
    std::printf("%s", EffectiveConfigToml().c_str());
    result.exit_code = kExitOk;
  }
  return result;
}

}  // namespace metasrv::server
