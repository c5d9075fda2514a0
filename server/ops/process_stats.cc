#include "server/ops/process_stats.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"

namespace metasrv::server {
namespace {

// The system's boot time, seconds since the epoch (btime of /proc/stat).
double BootTimeSeconds() {
  std::ifstream in("/proc/stat");
  std::string key;
  double value = 0;
  while (in >> key) {
    if (key == "btime") {
      in >> value;
      return value;
    }
    in.ignore(1 << 20, '\n');
  }
  return 0;
}

}  // namespace

ProcessStats ReadProcessStats() {
  ProcessStats stats;
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
  std::ifstream stat_file("/proc/self/stat");
  std::string line;
  std::getline(stat_file, line);
  // Fields after the command name, which is in parentheses and may hold
  // spaces: state is field 3, utime 14, stime 15, starttime 22, vsize 23,
  // rss 24 (proc(5)).
  const size_t close = line.rfind(')');
  if (close != std::string::npos && ticks > 0) {
    std::vector<std::string> f =
        absl::StrSplit(line.substr(close + 2), ' ', absl::SkipEmpty());
    auto field = [&f](int n) {  // n: proc(5)'s 1-based field number.
      double v = 0;
      const size_t i = static_cast<size_t>(n - 3);
      if (i >= f.size() || !absl::SimpleAtod(f[i], &v)) return 0.0;
      return v;
    };
    stats.cpu_seconds = (field(14) + field(15)) / ticks;
    stats.start_time_seconds = BootTimeSeconds() + field(22) / ticks;
    stats.virtual_bytes = field(23);
    stats.resident_bytes = field(24) * page;
  }
  if (DIR* dir = opendir("/proc/self/fd")) {
    int n = 0;
    while (readdir(dir) != nullptr) ++n;
    closedir(dir);
    stats.open_fds = n - 3;  // ".", ".." and the directory's own fd.
  }
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0) {
    stats.max_fds = static_cast<double>(limit.rlim_cur);
  }
  return stats;
}

}  // namespace metasrv::server
