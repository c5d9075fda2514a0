#include "server/ops/log_limit.h"

#include <algorithm>
#include <atomic>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"

namespace metasrv::server {
namespace {

// A token bucket: holds up to `capacity` lines, refilled by `per_interval`
// lines each interval.
struct Bucket {
  double tokens = 0;
  absl::Time refilled = absl::InfinitePast();

  // Refills up to `now`; then takes one line if there is one.
  bool Take(absl::Time now, absl::Duration interval, double capacity,
            double per_interval) {
    if (refilled == absl::InfinitePast()) {
      tokens = capacity;
    } else {
      tokens = std::min(capacity,
                        tokens + per_interval * ((now - refilled) / interval));
    }
    refilled = now;
    if (tokens < 1) return false;
    tokens -= 1;
    return true;
  }
};

class RateLimit {
 public:
  bool Admit(absl::string_view event, absl::string_view subject,
             uint64_t* left_out) {
    absl::MutexLock lock(&mu_);
    const absl::Time now = clock_->Monotonic();
    if (interval_ == absl::ZeroDuration()) {
      *left_out = 0;
      return true;
    }
    std::string key = absl::StrCat(event, "\n", subject);
    auto it = subjects_.find(key);
    if (it == subjects_.end()) {
      if (subjects_.size() >= static_cast<size_t>(kLogSubjects)) Forget(now);
      if (subjects_.size() >= static_cast<size_t>(kLogSubjects)) {
        return Suppress(nullptr);
      }
      it = subjects_.emplace(std::move(key), Subject()).first;
    }
    Subject& s = it->second;
    // The subject's own limit first: a subject over it spends nothing of
    // the event's.
    if (!s.bucket.Take(now, interval_, kLogLineBurst, 1)) return Suppress(&s);
    if (!events_[event].Take(now, interval_, kLogLinesPerEvent,
                             kLogLinesPerEvent)) {
      s.bucket.tokens += 1;  // Not written: its own line is not spent.
      return Suppress(&s);
    }
    *left_out = std::exchange(s.suppressed, 0);
    return true;
  }
  void set_interval(absl::Duration d) {
    absl::MutexLock lock(&mu_);
    interval_ = d;
    subjects_.clear();
    events_.clear();
  }
  void set_clock(const core::Clock* clock) {
    absl::MutexLock lock(&mu_);
    clock_ = clock != nullptr ? clock : core::SystemClock();
    subjects_.clear();
    events_.clear();
  }
  uint64_t suppressed_total() const { return suppressed_total_.load(); }

 private:
  struct Subject {
    Bucket bucket;            // Its lines.
    uint64_t suppressed = 0;  // Left out since its last line.
  };

  bool Suppress(Subject* s) {
    if (s != nullptr) ++s->suppressed;
    suppressed_total_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  // Drops the subjects whose bucket has refilled (idle for a burst's
  // worth of intervals): a line about them would be admitted anyway.
  void Forget(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const absl::Duration idle = kLogLineBurst * interval_;
    absl::erase_if(subjects_, [&](const auto& entry) {
      return now - entry.second.bucket.refilled >= idle;
    });
  }

  absl::Mutex mu_;  // Guards the fields below.
  absl::Duration interval_ ABSL_GUARDED_BY(mu_) = absl::Seconds(10);
  const core::Clock* clock_ ABSL_GUARDED_BY(mu_) = core::SystemClock();
  // By "event\nsubject"; at most kLogSubjects.
  absl::flat_hash_map<std::string, Subject> subjects_ ABSL_GUARDED_BY(mu_);
  // By event; bounded by the code's call sites (gRPC's file:line and ours).
  absl::flat_hash_map<std::string, Bucket> events_ ABSL_GUARDED_BY(mu_);
  std::atomic<uint64_t> suppressed_total_{0};  // All left out, ever.
};

RateLimit& Limit() {
  static RateLimit* limit = new RateLimit();
  return *limit;
}

}  // namespace

bool AdmitLogLine(absl::string_view event, absl::string_view subject,
                  uint64_t* left_out) {
  return Limit().Admit(event, subject, left_out);
}

void SetLogLineInterval(absl::Duration interval) {
  Limit().set_interval(interval);
}

void SetLogLineClock(const core::Clock* clock) { Limit().set_clock(clock); }

uint64_t LogLinesSuppressed() { return Limit().suppressed_total(); }

}  // namespace metasrv::server
