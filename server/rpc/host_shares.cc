#include "server/rpc/host_shares.h"

#include <algorithm>
#include <vector>

namespace metasrv::server {

bool HostBudget::Take(const std::string& host, int64_t bytes) {
  absl::MutexLock lock(&mu_);
  auto it = by_host_.find(host);
  const int64_t mine = it == by_host_.end() ? 0 : it->second.bytes;
  if (total_ + bytes > limit_) {
    const int64_t hosts =
        static_cast<int64_t>(by_host_.size()) + (it == by_host_.end() ? 1 : 0);
    const int64_t share = limit_ / hosts;
    if (mine + bytes > share) return false;
    // Under its share: the hosts over theirs, the one holding the most
    // first, owe back what passes the bound.
    std::vector<Held*> over;
    for (auto& [key, held] : by_host_) {
      if (key != host && held.bytes - held.owed > share) over.push_back(&held);
    }
    std::sort(over.begin(), over.end(),
              [](Held* a, Held* b) { return a->bytes > b->bytes; });
    int64_t due = total_ + bytes - limit_;
    for (Held* held : over) {
      const int64_t owes = std::min(due, held->bytes - held->owed - share);
      held->owed += owes;
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
