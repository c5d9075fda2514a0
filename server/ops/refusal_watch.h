// Whether the gRPC port turns away every new call of a kind that matters
// (a flownode's heartbeats, the frontends' reads): what readiness reports.
// One host refused while others are served is not that: the metrics count
// it (metasrv_calls_refused_total), readiness does not flip.
#ifndef METASRV_SERVER_OPS_REFUSAL_WATCH_H_
#define METASRV_SERVER_OPS_REFUSAL_WATCH_H_

#include <array>
#include <atomic>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/clock.h"

namespace metasrv::server {

// Thread-safe; Served() takes no lock.
class RefusalWatch {
 public:
  enum class Kind { kHeartbeat, kRead };
  static constexpr int kKinds = 2;

  // Borrows `clock` (its Monotonic()). A kind is refused while a call of it
  // was refused by a bound within `window` and none was served in it.
  explicit RefusalWatch(const core::Clock* clock,
                        absl::Duration window = absl::Seconds(5));

  // A call of `kind` got its request to its method.
  void Served(Kind kind);
  // A call of `kind` was refused by a bound, for `reason` (its status).
  void Refused(Kind kind, absl::string_view reason) ABSL_LOCKS_EXCLUDED(mu_);
  // Empty while no kind is refused; else "every new <kind> call is refused:
  // <reason>" for each that is, joined by "; ".
  std::string Refusing() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  const core::Clock* const clock_;  // Borrowed.
  const absl::Duration window_;
  // By kind: when one was last served (monotonic, ns since the epoch).
  std::array<std::atomic<int64_t>, kKinds> served_ns_{};
  mutable absl::Mutex mu_;  // Guards the fields below.
  std::array<absl::Time, kKinds> refused_at_ ABSL_GUARDED_BY(mu_);
  std::array<std::string, kKinds> reason_ ABSL_GUARDED_BY(mu_);
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_OPS_REFUSAL_WATCH_H_
