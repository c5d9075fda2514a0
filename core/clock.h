// Time, behind an interface, so that leases and expiry can be tested without
// sleeping (as leveldb does with its Env).
#ifndef METASRV_CORE_CLOCK_H_
#define METASRV_CORE_CLOCK_H_

#include "absl/base/thread_annotations.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "kv/mutex.h"

namespace metasrv::core {

// Thread safety: implementations are safe to call from any thread.
class Clock {
 public:
  virtual ~Clock() = default;
  // Wall-clock time: what to show and store.
  virtual absl::Time Now() const = 0;
  // A time that never jumps (NTP steps, an operator setting the date), for
  // timeouts: only differences between two calls mean anything. Default:
  // Now(), which is what a manual clock wants.
  virtual absl::Time Monotonic() const { return Now(); }
};

// The real clock. Process-wide; never deleted.
const Clock* SystemClock();

// Test clocks: only tests construct them (the server runs on
// SystemClock()).

// A clock that moves only when told to.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(absl::Time start = absl::UnixEpoch() + absl::Hours(24))
      : now_(start) {}
  absl::Time Now() const override {
    MutexLock lock(&mu_);
    return now_;
  }
  void Advance(absl::Duration d) {
    MutexLock lock(&mu_);
    now_ += d;
  }

 private:
  mutable Mutex mu_;                     // Guards now_.
  absl::Time now_ ABSL_GUARDED_BY(mu_);  // The time it says.
};

// A clock for tests whose wall time and monotonic time move separately, to
// show that a step of the wall clock (NTP, someone setting the date) changes
// nothing that is timed on the monotonic one.
class SplitClock final : public Clock {
 public:
  absl::Time Now() const override { return wall.Now(); }
  absl::Time Monotonic() const override { return mono.Now(); }
  ManualClock wall;  // What Now() says.
  ManualClock mono;  // What Monotonic() says.
};

}  // namespace metasrv::core

#endif  // METASRV_CORE_CLOCK_H_
