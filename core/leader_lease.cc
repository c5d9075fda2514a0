#include "core/leader_lease.h"

#include <algorithm>

namespace metasrv::core {

LeaderLease::LeaderLease(const Clock* clock, absl::Duration ttl)
    : clock_(clock), ttl_(ttl) {}

void LeaderLease::Confirmed(absl::Time sent) {
  MutexLock lock(&mu_);
  valid_until_ = std::max(valid_until_, sent + ttl_ * 2 / 3);
  held_until_ = std::max(held_until_, sent + ttl_ * (1 - kRateMargin));
}

void LeaderLease::Lost() {
  MutexLock lock(&mu_);
  valid_until_ = held_until_ = absl::InfinitePast();
}

bool LeaderLease::Valid() const { return clock_->Monotonic() < valid_until(); }

absl::Time LeaderLease::valid_until() const {
  MutexLock lock(&mu_);
  return valid_until_;
}

absl::Time LeaderLease::held_until() const {
  MutexLock lock(&mu_);
  return held_until_;
}

}  // namespace metasrv::core
