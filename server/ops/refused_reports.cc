#include "server/ops/refused_reports.h"

#include <algorithm>

namespace metasrv::server {

RefusedReports::RefusedReports(const core::Clock* clock, size_t capacity,
                               absl::Duration keep)
    : clock_(clock), capacity_(capacity), keep_(keep) {}

void RefusedReports::Refused(uint64_t node, const absl::Status& why) {
  const int64_t now = absl::ToUnixMillis(clock_->Now());
  absl::MutexLock lock(&mu_);
  // The forgotten go now and then (this is the rare path; Merged() stays
  // one load once none is left).
  if (now - swept_ms_ > absl::ToInt64Milliseconds(keep_) / 10) {
    swept_ms_ = now;
    absl::erase_if(refused_, [&](const auto& entry) {
      return entry.second.last_ms < now - absl::ToInt64Milliseconds(keep_);
    });
  }
  if (!refused_.contains(node) && refused_.size() >= capacity_) {
    auto oldest = std::min_element(
        refused_.begin(), refused_.end(), [](const auto& a, const auto& b) {
          return a.second.last_ms < b.second.last_ms;
        });
    refused_.erase(oldest);
  }
  Refusal& refusal = refused_[node];
  refusal.node_id = node;
  refusal.why = std::string(why.message());
  ++refusal.count;
  refusal.last_ms = now;
  size_.store(refused_.size(), std::memory_order_relaxed);
}

void RefusedReports::Forget(uint64_t node) {
  absl::MutexLock lock(&mu_);
  refused_.erase(node);
  size_.store(refused_.size(), std::memory_order_relaxed);
}

std::vector<Refusal> RefusedReports::List(
    absl::Span<const uint64_t> only) const {
  const int64_t since =
      absl::ToUnixMillis(clock_->Now()) - absl::ToInt64Milliseconds(keep_);
  std::vector<Refusal> out;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [node, refusal] : refused_) {
      if (refusal.last_ms < since) continue;
      if (!only.empty() &&
          std::find(only.begin(), only.end(), node) == only.end()) {
        continue;
      }
      out.push_back(refusal);
    }
  }
  std::sort(out.begin(), out.end(), [](const Refusal& a, const Refusal& b) {
    return a.node_id < b.node_id;
  });
  return out;
}

}  // namespace metasrv::server
