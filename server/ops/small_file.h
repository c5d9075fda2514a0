// Reading the small files settings name: the config file, flag files,
// certificates, tokens and passwords.
#ifndef METASRV_SERVER_OPS_SMALL_FILE_H_
#define METASRV_SERVER_OPS_SMALL_FILE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace metasrv::server {

// The largest file a setting may name.
inline constexpr int64_t kMaxConfigBytes = 1 << 20;

// OK if `path` names a regular file of at most kMaxConfigBytes; else
// kInvalidArgument (empty path, a directory, a device such as /dev/zero, too
// large) or kNotFound, naming `what` and the path.
absl::Status CheckReadableConfig(const std::string& path, const char* what);

// The whole file at `path`, checked as CheckReadableConfig does; errors
// (also an unreadable file) are kInvalidArgument naming `what` and the path.
absl::StatusOr<std::string> ReadSmallFile(const std::string& path,
                                          const char* what);

}  // namespace metasrv::server

#endif  // METASRV_SERVER_OPS_SMALL_FILE_H_
