#include "server/ops/self_description.h"

#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "server/ops/build_info.h"
#include "server/ops/process_stats.h"

namespace metasrv::server {
namespace {

// The first line of `path`, or empty.
std::string FirstLine(const char* path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// CPU the process may use, in millicores: cgroup v2's cpu.max quota, else
// the online processors.
int64_t TotalCpuMillicores() {
  const std::vector<std::string> max =
      absl::StrSplit(FirstLine("/sys/fs/cgroup/cpu.max"), ' ');
  int64_t quota = 0, period = 0;
  if (max.size() == 2 && absl::SimpleAtoi(max[0], &quota) &&
      absl::SimpleAtoi(max[1], &period) && quota > 0 && period > 0) {
    return quota * 1000 / period;
  }
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  return cpus > 0 ? int64_t{cpus} * 1000 : 0;
}

// Memory the process may use: cgroup v2's memory.max, else the machine's.
int64_t TotalMemoryBytes() {
  int64_t limit = 0;
  if (absl::SimpleAtoi(FirstLine("/sys/fs/cgroup/memory.max"), &limit) &&
      limit > 0) {
    return limit;
  }
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? int64_t{pages} * page : 0;
}

std::string HostName() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "";
  return buf;
}

}  // namespace

SelfDescription::SelfDescription(std::string addr, const core::Clock* clock)
    : clock_(clock) {
  const BuildInfo build = GetBuildInfo();
  last_.addr = std::move(addr);
  last_.info.version = build.version;
  last_.info.git_commit = build.commit;
  last_.info.start_time_ms =
      static_cast<uint64_t>(ReadProcessStats().start_time_seconds * 1000);
  last_.info.hostname = HostName();
  last_.info.total_cpu_millicores = TotalCpuMillicores();
  last_.info.total_memory_bytes = TotalMemoryBytes();
}

core::MetasrvNodeInfo SelfDescription::Now() {
  absl::MutexLock lock(&mu_);
  const absl::Time now = clock_->Monotonic();
  if (now - sampled_at_ < absl::Seconds(1)) return last_;
  const ProcessStats stats = ReadProcessStats();
  if (sampled_at_ != absl::InfinitePast() && now > sampled_at_) {
    last_.info.cpu_usage_millicores = static_cast<int64_t>(
        (stats.cpu_seconds - cpu_seconds_) * 1000 /
        absl::ToDoubleSeconds(now - sampled_at_));
  }
  last_.info.memory_usage_bytes = static_cast<int64_t>(stats.resident_bytes);
  sampled_at_ = now;
  cpu_seconds_ = stats.cpu_seconds;
  return last_;
}

}  // namespace metasrv::server
