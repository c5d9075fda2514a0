#include "core/clock.h"

#include <chrono>

namespace metasrv::core {
namespace {

class RealClock final : public Clock {
 public:
  absl::Time Now() const override { return absl::Now(); }
  absl::Time Monotonic() const override {
    return absl::UnixEpoch() +
           absl::FromChrono(
               std::chrono::steady_clock::now().time_since_epoch());
  }
};

}  // namespace

const Clock* SystemClock() {
  static const RealClock* const clock = new RealClock();
  return clock;
}

}  // namespace metasrv::core
