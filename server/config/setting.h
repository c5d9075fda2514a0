// One setting of the server: a row of the table in settings.cc. A row is the
// setting's flag name, its key in the TOML file (GreptimeDB's where
// GreptimeDB has the setting) and the environment variable made from that
// key, its help, the ServerOptions member it fills (which gives its type and
// default) and the check its value must pass.
//
// Every source turns its text into a SettingInput and calls Set(); Check()
// and Get() read the member back. Rows are immutable; all methods are
// thread-compatible (the options they take are the caller's).
#ifndef METASRV_SERVER_CONFIG_SETTING_H_
#define METASRV_SERVER_CONFIG_SETTING_H_

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "server/config/server_options.h"

namespace metasrv::server {

// A value as a source gives it, before it is read as its setting's type.
struct SettingInput {
  // kText: untyped text (the command line, a flag file, the environment);
  // the others are TOML's types.
  enum Kind { kText, kString, kInteger, kFloat, kBool, kList, kTable, kOther };
  Kind kind = kText;               // What the source says it is.
  std::string text;                // A scalar's text.
  std::vector<std::string> items;  // kList's strings.
};

// A setting's value as --print_config writes it (durations as "3s").
using SettingValue =
    std::variant<std::string, int64_t, std::vector<std::string>>;

// The value as one line of text: "3s", "a,b", "42".
std::string SettingText(const SettingValue& value);

// `in` as each type a setting can have; kInvalidArgument "SOURCE: expected
// ..." otherwise. Text is read as GreptimeDB writes it: durations such as
// "3s" or "1h30m", sizes such as "4MiB" for integers, lists comma-separated.
absl::Status ParseSetting(const SettingInput& in, const std::string& source,
                          std::string* out);
absl::Status ParseSetting(const SettingInput& in, const std::string& source,
                          std::vector<std::string>* out);
absl::Status ParseSetting(const SettingInput& in, const std::string& source,
                          absl::Duration* out);
absl::Status ParseSetting(const SettingInput& in, const std::string& source,
                          int* out);
absl::Status ParseSetting(const SettingInput& in, const std::string& source,
                          uint64_t* out);

SettingValue ToSettingValue(const std::string& v);
SettingValue ToSettingValue(const std::vector<std::string>& v);
SettingValue ToSettingValue(absl::Duration v);
SettingValue ToSettingValue(int v);
SettingValue ToSettingValue(uint64_t v);

class Setting {
 public:
  // What every row states besides its member and check.
  struct Info {
    const char* name;  // The flag, --name; also its own top-level key.
    // GreptimeDB's dotted key for the same setting ("grpc.bind_addr");
    // null: the setting is this service's own, keyed by its name.
    const char* greptime_key;
    const char* help;  // One sentence or two, for --help and the README.
    bool brief;        // Shown by --help, not only by --helpfull.
    // For a setting that names a file: where CheckOptions puts what it
    // holds; null otherwise.
    std::string SettingFiles::*file = nullptr;
  };

  explicit Setting(Info info) : info_(info) {}
  virtual ~Setting() = default;

  const char* name() const { return info_.name; }
  // The dotted key in the TOML file.
  std::string key() const {
    return info_.greptime_key != nullptr ? info_.greptime_key : info_.name;
  }
  bool greptime_key() const { return info_.greptime_key != nullptr; }
  // GREPTIMEDB_METASRV__ and the key, `__` between levels, upper case.
  std::string env() const;
  const char* help() const { return info_.help; }
  bool brief() const { return info_.brief; }
  std::string SettingFiles::*file() const { return info_.file; }

  // "string", "list", "duration" or "integer".
  virtual const char* type() const = 0;
  // Sets the member from `in`; kInvalidArgument naming `source` for a value
  // of the wrong type, and the member unchanged.
  virtual absl::Status Set(const SettingInput& in, const std::string& source,
                           ServerOptions* options) const = 0;
  virtual SettingValue Get(const ServerOptions& options) const = 0;
  // The member's own check: OK, or kInvalidArgument "--name=value why".
  virtual absl::Status Check(const ServerOptions& options) const = 0;

 private:
  const Info info_;  // As the table states it.
};

// A row whose member has type T: `at` finds the member, `rule` checks a
// value (OK, or an error saying why not: "must be positive").
template <typename T>
class TypedSetting final : public Setting {
 public:
  using Access = std::function<T&(ServerOptions&)>;
  using Rule = std::function<absl::Status(const T&)>;

  TypedSetting(Info info, Access at, Rule rule)
      : Setting(info), at_(std::move(at)), rule_(std::move(rule)) {}

  const char* type() const override;
  absl::Status Set(const SettingInput& in, const std::string& source,
                   ServerOptions* options) const override {
    T value{};
    absl::Status parsed = ParseSetting(in, source, &value);
    if (parsed.ok()) at_(*options) = std::move(value);
    return parsed;
  }
  SettingValue Get(const ServerOptions& options) const override {
    // The accessor is shared by Set(); it does not change what it finds.
    return ToSettingValue(at_(const_cast<ServerOptions&>(options)));
  }
  absl::Status Check(const ServerOptions& options) const override {
    if (!rule_) return absl::OkStatus();
    absl::Status why = rule_(at_(const_cast<ServerOptions&>(options)));
    if (why.ok()) return why;
    return absl::InvalidArgumentError(absl::StrCat(
        "--", name(), "=", SettingText(Get(options)), " ", why.message()));
  }

 private:
  const Access at_;  // The member.
  const Rule rule_;  // Its check; empty: any value.
};

template <>
inline const char* TypedSetting<std::string>::type() const {
  return "string";
}
template <>
inline const char* TypedSetting<std::vector<std::string>>::type() const {
  return "list";
}
template <>
inline const char* TypedSetting<absl::Duration>::type() const {
  return "duration";
}
template <>
inline const char* TypedSetting<int>::type() const {
  return "integer";
}
template <>
inline const char* TypedSetting<uint64_t>::type() const {
  return "integer";
}

}  // namespace metasrv::server

#endif  // METASRV_SERVER_CONFIG_SETTING_H_
