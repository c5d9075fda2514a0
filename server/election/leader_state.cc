#include "server/election/leader_state.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/election/candidate_info.h"
#include "server/ops/logging.h"
#include "spdlog/spdlog.h"

namespace metasrv::server {

LeaderState::LeaderState(std::string self_addr, std::string store_name,
                         const core::Clock* clock, absl::Duration lease_ttl,
                         core::LeadershipListener* listener)
    : self_addr_(std::move(self_addr)),
      store_name_(std::move(store_name)),
      clock_(clock),
      listener_(listener),
      lease_(clock, lease_ttl) {}

core::Leadership::Term LeaderState::CurrentTerm() const {
  absl::MutexLock lock(&mu_);
  if (!leading_ || !lease_.Valid()) return {};
  return {true, state_term_};
}

bool LeaderState::leading() const {
  absl::MutexLock lock(&mu_);
  return leading_;
}

void LeaderState::SetObserved(std::string addr, absl::Time until) {
  bool changed = false;
  {
    absl::MutexLock lock(&mu_);
    changed = addr != observed_;
    if (changed) observed_ = addr;
    observed_until_ = until;
    last_contact_ = clock_->Monotonic();  // The store just answered.
  }
  // Once per change: a follower says whom it now sends clients to.
  if (changed && !addr.empty() && addr != self_addr_) {
    spdlog::info("the leader is now {} (on {})", addr, store_name_);
  } else if (changed && addr.empty()) {
    spdlog::info("no leader is known on {}", store_name_);
  }
}

LeaderState::Named LeaderState::Leader() const {
  absl::MutexLock lock(&mu_);
  if (leading_) return {self_addr_, false};
  if (observed_.empty()) return {};
  const absl::Time now = clock_->Monotonic();
  // Out of touch with the store for longer than a lease: the leader we
  // last heard of has stepped down by now (it cannot renew either), or
  // another may lead; we cannot tell, so we name none.
  if (now < observed_until_ && now - last_contact_ <= lease_.ttl()) {
    return {observed_, false};
  }
  return {"", true};
}

void LeaderState::SetPeers(std::vector<core::MetasrvNodeInfo> peers) {
  SortByAddress(&peers);
  absl::MutexLock lock(&mu_);
  peers_ = std::move(peers);
}

std::vector<core::MetasrvNodeInfo> LeaderState::Peers() const {
  absl::MutexLock lock(&mu_);
  return peers_;
}

std::vector<std::string> LeaderState::FollowerAddrs() const {
  const std::string leader = Leader().addr;
  absl::MutexLock lock(&mu_);
  return FollowersOf(peers_, leader);
}

bool LeaderState::BecomeLeader(const std::function<bool()>& may_lead) {
  absl::MutexLock transition(&transition_mu_);
  if (!may_lead()) return false;
  if (!lease_.Valid()) return false;  // Too late: about to step down.
  // Start from an empty state before accepting anything.
  const uint64_t term = listener_->OnBecomeLeader();
  {
    absl::MutexLock lock(&mu_);
    leading_ = true;
    state_term_ = term;
  }
  const LogFields fields({{"state_generation", absl::StrCat(term)}});
  spdlog::info(
      "leading on {}: flow state reset, this replica's flow-state generation "
      "{}",
      store_name_, term);
  return true;
}

uint64_t LeaderState::StepDown(const char* why) {
  absl::MutexLock transition(&transition_mu_);
  uint64_t term = 0;
  {
    absl::MutexLock lock(&mu_);
    if (!leading_) return 0;
    leading_ = false;
    term = state_term_;
    observed_.clear();
  }
  // Not leading from here on; now end the streams and drop the state.
  const uint64_t dropped = listener_->OnStepDown();
  const LogFields fields({{"state_generation", absl::StrCat(term)}});
  spdlog::warn(
      "stepped down as leader (this replica's flow-state generation {}): "
      "{}; {} keys "
      "dropped",
      term, why, dropped);
  return dropped;
}

StoreHealth LeaderState::Health() const {
  StoreHealth health;
  health.elected = true;
  bool leading = false;
  {
    absl::MutexLock lock(&mu_);
    health.healthy = healthy_;
    health.errors = static_cast<double>(errors_);
    if (!healthy_) {
      // Since it last answered, when it ever did.
      health.unhealthy_for =
          clock_->Monotonic() - (last_contact_ == absl::InfinitePast()
                                     ? unhealthy_since_
                                     : last_contact_);
      health.last_error = last_error_;
    }
    leading = leading_;
  }
  if (leading) {
    const absl::Duration left = lease_.valid_until() - clock_->Monotonic();
    health.lease_seconds = std::max(0.0, absl::ToDoubleSeconds(left));
  }
  return health;
}

void LeaderState::ReportHealth(const absl::Status& status) {
  if (absl::IsCancelled(status)) return;  // Our own doing.
  {
    absl::MutexLock lock(&mu_);
    if (!status.ok()) {
      ++errors_;
      last_error_ = status.ToString();
    }
    if (status.ok()) last_contact_ = clock_->Monotonic();
    if (status.ok() == healthy_) return;
    healthy_ = status.ok();
    if (!healthy_) unhealthy_since_ = clock_->Monotonic();
  }
  if (status.ok()) {
    spdlog::info("{} is reachable again", store_name_);
  } else {
    spdlog::warn("{} failed: {}; retrying with backoff", store_name_,
                 status.ToString());
  }
}

bool LeaderState::healthy() const {
  absl::MutexLock lock(&mu_);
  return healthy_;
}

}  // namespace metasrv::server
