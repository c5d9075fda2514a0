#include "server/ops/store_address.h"

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace metasrv::server {
namespace {

std::string PercentDecode(absl::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    int hex = 0;
    if (s[i] == '%' && i + 2 < s.size() &&
        absl::SimpleHexAtoi(s.substr(i + 1, 2), &hex)) {
      out.push_back(static_cast<char>(hex));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<MysqlAddress> ParseMysqlAddress(const std::string& url) {
  constexpr absl::string_view kScheme = "mysql://";
  absl::string_view rest = url;
  if (!absl::ConsumePrefix(&rest, kScheme)) {
    return absl::InvalidArgumentError(
        absl::StrCat("mysql_store address '", url,
                     "' is not mysql://user:password@host:port/database"));
  }
  rest = rest.substr(0, rest.find('?'));
  MysqlAddress a;
  const size_t at = rest.rfind('@');
  if (at != absl::string_view::npos) {
    std::pair<absl::string_view, absl::string_view> creds =
        absl::StrSplit(rest.substr(0, at), absl::MaxSplits(':', 1));
    a.user = PercentDecode(creds.first);
    a.password = PercentDecode(creds.second);
    rest = rest.substr(at + 1);
  }
  const size_t slash = rest.find('/');
  if (slash != absl::string_view::npos) {
    a.database = PercentDecode(rest.substr(slash + 1));
    rest = rest.substr(0, slash);
  }
  absl::string_view port;
  if (absl::ConsumePrefix(&rest, "[")) {  // [IPv6]:port
    const size_t close = rest.find(']');
    if (close == absl::string_view::npos) rest = absl::string_view();
    port = rest.substr(std::min(rest.size(), close + 1));
    rest = rest.substr(0, close);
    if (!port.empty() && !absl::ConsumePrefix(&port, ":")) rest = {};
  } else if (const size_t colon = rest.rfind(':');
             colon != absl::string_view::npos) {
    port = rest.substr(colon + 1);
    rest = rest.substr(0, colon);
  }
  if (!port.empty() &&
      (!absl::SimpleAtoi(port, &a.port) || a.port == 0 || a.port > 65535)) {
    return absl::InvalidArgumentError(
        absl::StrCat("mysql_store address '", url, "': bad port"));
  }
  a.host = std::string(rest);
  if (a.host.empty() || a.database.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "mysql_store address '", url, "' needs a host and a database"));
  }
  return a;
}

}  // namespace metasrv::server
