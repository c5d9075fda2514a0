#include "core/clock.h"

namespace metasrv::core {
namespace {

class RealClock final : public Clock {
 public:
  absl::Time Now() const override { return absl::Now(); }
};

}  // namespace

const Clock* SystemClock() {
  static const RealClock* const clock = new RealClock();
  return clock;
}

}  // namespace metasrv::core
