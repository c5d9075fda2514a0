#include "server/ops/log_limit.h"

#include <atomic>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"

namespace metasrv::server {
namespace {

// What has been written from each place.
class RateLimit {
 public:
  bool Admit(absl::string_view where, uint64_t* left_out) {
    const absl::Time now = absl::Now();
    absl::MutexLock lock(&mu_);
    Place& place = places_[where];
    if (now - place.last < interval_) {
      ++place.suppressed;
      suppressed_total_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    place.last = now;
    *left_out = std::exchange(place.suppressed, 0);
    return true;
  }
  void set_interval(absl::Duration d) {
    absl::MutexLock lock(&mu_);
    interval_ = d;
  }
  uint64_t suppressed_total() const { return suppressed_total_.load(); }

 private:
  struct Place {
    absl::Time last = absl::InfinitePast();  // When a line was last written.
    uint64_t suppressed = 0;                 // Left out since then.
  };
  absl::Mutex mu_;  // Guards the fields below.
  absl::Duration interval_ ABSL_GUARDED_BY(mu_) =
      absl::Seconds(10);  // Between lines.
  // By place; bounded by the code's call sites (gRPC's file:line and ours).
  absl::flat_hash_map<std::string, Place> places_ ABSL_GUARDED_BY(mu_);
  std::atomic<uint64_t> suppressed_total_{0};  // All left out, ever.
};

RateLimit& Limit() {
  static RateLimit* limit = new RateLimit();
  return *limit;
}

}  // namespace

bool AdmitLogLine(absl::string_view place, uint64_t* left_out) {
  return Limit().Admit(place, left_out);
}

void SetLogLineInterval(absl::Duration interval) {
  Limit().set_interval(interval);
}

uint64_t LogLinesSuppressed() { return Limit().suppressed_total(); }

}  // namespace metasrv::server
