#include "server/ops/auth_backoff.h"

#include <algorithm>

namespace metasrv::server {

AuthBackoff::AuthBackoff(Options options, const core::Clock* clock)
    : options_(options), clock_(clock) {}

absl::Time AuthBackoff::Failed(absl::string_view host) {
  const absl::Time now = clock_->Monotonic();
  absl::MutexLock lock(&mu_);
  auto it = peers_.find(host);
  if (it == peers_.end()) {
    if (peers_.size() >= options_.max_peers) {
      // Forget the peer whose wait ends first: it is the least slowed.
      auto oldest = std::min_element(peers_.begin(), peers_.end(),
                                     [](const auto& a, const auto& b) {
                                       return a.second.until < b.second.until;
                                     });
      peers_.erase(oldest);
    }
    it = peers_.emplace(std::string(host), Peer{}).first;
  }
  Peer& peer = it->second;
  ++peer.failures;
  absl::Time at = now;
  if (const int paid = peer.failures - options_.free_failures; paid > 0) {
    absl::Duration wait = options_.first_wait;
    for (int i = 1; i < paid && wait < options_.max_wait; ++i) wait *= 2;
    at = std::max(now, peer.until) + std::min(wait, options_.max_wait);
  }
  if (options_.failed_answers_per_second > 0) {
    any_until_ = std::max(now, any_until_) +
                 absl::Seconds(1) / options_.failed_answers_per_second;
    at = std::max(at, any_until_);
  }
  peer.until = at;
  return at;
}

void AuthBackoff::Succeeded(absl::string_view host) {
  absl::MutexLock lock(&mu_);
  peers_.erase(host);
}

size_t AuthBackoff::size() const {
  absl::MutexLock lock(&mu_);
  return peers_.size();
}

}  // namespace metasrv::server
