// The units settings are written in: GreptimeDB's durations and sizes, and
// the shortest way to print a duration back.
#ifndef METASRV_SERVER_CONFIG_UNITS_H_
#define METASRV_SERVER_CONFIG_UNITS_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace metasrv::server {

// "3s", "500ms", "24hours", "1h 30m", "10m", "0": GreptimeDB's (humantime)
// durations. kInvalidArgument otherwise.
absl::StatusOr<absl::Duration> ParseHumanDuration(const std::string& text);

// "512MB", "64KiB", "4194304", "0.5GB": GreptimeDB's sizes, in binary units
// (KB = KiB = 1024; src/common/base/src/readable_size.rs). kInvalidArgument
// otherwise.
absl::StatusOr<uint64_t> ParseReadableSize(const std::string& text);

// `d` in the largest unit it is a whole number of: "24h", "500ms", "0s".
std::string WholeUnits(absl::Duration d);

}  // namespace metasrv::server

#endif  // METASRV_SERVER_CONFIG_UNITS_H_
