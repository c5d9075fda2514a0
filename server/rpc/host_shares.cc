#include "server/rpc/host_shares.h"

#include <algorithm>

#include "core/fair_share.h"

namespace metasrv::server {

bool HostBudget::Take(const std::string& host, int64_t bytes) {
  absl::MutexLock lock(&mu_);
  if (total_ + bytes > limit_) {
    // What each holds and does not owe yet.
    core::FairShare<absl::string_view> fair(limit_, host);
    for (const auto& [key, held] : by_host_) {
      fair.Count(key, held.bytes - (key == host ? 0 : held.owed));
    }
    if (!fair.AskerMayTake(bytes)) return false;
    // Under its share: the hosts over theirs, the one holding the most
    // first, owe back what passes the bound.
    int64_t due = total_ + bytes - limit_;
    for (const auto& [held, key] : fair.Over()) {
      const int64_t owes = std::min(due, held - fair.share());
      by_host_.find(key)->second.owed += owes;
      if ((due -= owes) == 0) break;
    }
  }
  total_ += bytes;
  by_host_[host].bytes += bytes;
  return true;
}

void HostBudget::Give(const std::string& host, int64_t bytes) {
  absl::MutexLock lock(&mu_);
  auto it = by_host_.find(host);
  if (it == by_host_.end()) return;
  Held& held = it->second;
  bytes = std::min(bytes, held.bytes);
  total_ -= bytes;
  held.owed = std::max<int64_t>(0, held.owed - bytes);
  if ((held.bytes -= bytes) == 0) by_host_.erase(it);
}

int64_t HostBudget::Owed(const std::string& host) const {
  absl::MutexLock lock(&mu_);
  auto it = by_host_.find(host);
  return it == by_host_.end() ? 0 : it->second.owed;
}

int64_t HostBudget::held() const {
  absl::MutexLock lock(&mu_);
  return total_;
}

void HostInflation::Roll(absl::Time now) {
  if (now - second_ < absl::Seconds(1)) return;
  second_ = now;
  total_ = 0;
  by_host_.clear();
}

bool HostInflation::May(const std::string& host, absl::Time now) {
  absl::MutexLock lock(&mu_);
  Roll(now);
  if (total_ < limit_) return true;
  core::FairShare<absl::string_view> fair(limit_, host);
  for (const auto& [key, bytes] : by_host_) fair.Count(key, bytes);
  return fair.held(host) < fair.share();
}

void HostInflation::Charge(const std::string& host, int64_t bytes,
                           absl::Time now) {
  absl::MutexLock lock(&mu_);
  Roll(now);
  total_ += bytes;
  by_host_[host] += bytes;
}

void HostResets::Refill(Bucket* b, absl::Time now) const {
  b->tokens = std::min(
      burst_, b->tokens + absl::ToDoubleSeconds(now - b->at) * rate_);
  b->at = now;
}

bool HostResets::Take(const std::string& host, absl::Time now) {
  absl::MutexLock lock(&mu_);
  auto [it, fresh] = buckets_.try_emplace(host, Bucket{burst_, now});
  Bucket& b = it->second;
  Refill(&b, now);
  if (b.tokens < 1) {
    b.slowed_until = now + kSlowed;
    return false;
  }
  b.tokens -= 1;
  // A bounded map: hosts refill to full and are forgotten when it grows.
  if (fresh && buckets_.size() > 65536) {
    absl::erase_if(buckets_, [&](auto& entry) {
      Refill(&entry.second, now);
      return entry.second.tokens >= burst_ && entry.second.slowed_until < now;
    });
  }
  return true;
}

bool HostResets::Allowed(const std::string& host, absl::Time now) {
  absl::MutexLock lock(&mu_);
  auto it = buckets_.find(host);
  return it == buckets_.end() || now >= it->second.slowed_until;
}

}  // namespace metasrv::server
