#include "server/ops/log_limit.h"

#include <algorithm>
#include <atomic>
#include <list>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/node_hash_map.h"
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

// Per event: its subjects, the most recently seen first, at most
// kLogSubjects (past it the least recently seen is forgotten); lines about
// subjects it knows share one bucket, and first lines about subjects it
// does not know another, so that subjects kept fresh by the thousand never
// silence the first line about a new one, of this event or any other.
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
    Event& e = events_[event];
    auto it = e.index.find(subject);
    const bool known = it != e.index.end();
    if (known) {
      e.recent.splice(e.recent.begin(), e.recent, it->second);
    } else {
      if (e.index.size() >= static_cast<size_t>(kLogSubjects)) {
        e.index.erase(e.recent.back().name);
        e.recent.pop_back();
      }
      e.recent.emplace_front();
      e.recent.front().name = std::string(subject);
      e.index.emplace(e.recent.front().name, e.recent.begin());
    }
    Subject& s = e.recent.front();
    // The subject's own limit first: a subject over it spends nothing of
    // the event's.
    if (!s.bucket.Take(now, interval_, kLogLineBurst, 1)) return Suppress(&s);
    Bucket& shared = known ? e.known : e.first;
    if (!shared.Take(now, interval_, kLogLinesPerEvent, kLogLinesPerEvent)) {
      s.bucket.tokens += 1;  // Not written: its own line is not spent.
      return Suppress(&s);
    }
    *left_out = std::exchange(s.suppressed, 0);
    return true;
  }
  void set_interval(absl::Duration d) {
    absl::MutexLock lock(&mu_);
    interval_ = d;
    events_.clear();
  }
  void set_clock(const core::Clock* clock) {
    absl::MutexLock lock(&mu_);
    clock_ = clock != nullptr ? clock : core::SystemClock();
    events_.clear();
  }
  uint64_t suppressed_total() const { return suppressed_total_.load(); }

 private:
  struct Subject {
    std::string name;         // The node or host the lines are about.
    Bucket bucket;            // Its lines.
    uint64_t suppressed = 0;  // Left out since its last line.
  };
  struct Event {
    Bucket known;  // Lines about subjects it knows.
    Bucket first;  // Lines about subjects it does not know (yet, again).
    std::list<Subject> recent;  // The most recently seen first.
    // Into `recent`, by name (the key views the element's name).
    absl::flat_hash_map<absl::string_view, std::list<Subject>::iterator> index;
  };

  bool Suppress(Subject* s) {
    ++s->suppressed;
    suppressed_total_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }

  absl::Mutex mu_;  // Guards the fields below.
  absl::Duration interval_ ABSL_GUARDED_BY(mu_) = absl::Seconds(10);
  const core::Clock* clock_ ABSL_GUARDED_BY(mu_) = core::SystemClock();
  // By event; bounded by the code's call sites (gRPC's file:line and ours),
  // each of at most kLogSubjects subjects.
  absl::node_hash_map<std::string, Event> events_ ABSL_GUARDED_BY(mu_);
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
