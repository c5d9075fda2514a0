#include "server/ops/small_file.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace metasrv::server {

absl::Status CheckReadableConfig(const std::string& path, const char* what) {
  if (path.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": the path is empty"));
  }
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    return absl::NotFoundError(
        absl::StrCat(what, " ", path, ": ", std::strerror(errno)));
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " ", path, " is not a regular file"));
  }
  if (st.st_size > kMaxConfigBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " ", path, " has ", st.st_size, " bytes, more than ",
                     kMaxConfigBytes));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadSmallFile(const std::string& path,
                                          const char* what) {
  absl::Status readable = CheckReadableConfig(path, what);
  if (!readable.ok()) return absl::InvalidArgumentError(readable.message());
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " ", path, ": ", std::strerror(errno)));
  }
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace metasrv::server
