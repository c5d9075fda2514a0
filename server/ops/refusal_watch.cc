#include "server/ops/refusal_watch.h"

#include "absl/strings/str_cat.h"

namespace metasrv::server {
namespace {

constexpr const char* kKindNames[] = {"heartbeat", "read"};

}  // namespace

RefusalWatch::RefusalWatch(const core::Clock* clock, absl::Duration window)
    : clock_(clock), window_(window) {
  refused_at_.fill(absl::InfinitePast());
  for (auto& ns : served_ns_) ns.store(INT64_MIN);
}

void RefusalWatch::Served(Kind kind) {
  served_ns_[static_cast<int>(kind)].store(
      absl::ToUnixNanos(clock_->Monotonic()), std::memory_order_relaxed);
}

void RefusalWatch::Refused(Kind kind, absl::string_view reason) {
  absl::MutexLock lock(&mu_);
  refused_at_[static_cast<int>(kind)] = clock_->Monotonic();
  reason_[static_cast<int>(kind)] = std::string(reason);
}

std::string RefusalWatch::Refusing() const {
  const absl::Time now = clock_->Monotonic();
  std::string out;
  absl::MutexLock lock(&mu_);
  for (int k = 0; k < kKinds; ++k) {
    const int64_t served = served_ns_[k].load(std::memory_order_relaxed);
    const bool served_lately =
        served != INT64_MIN && now - absl::FromUnixNanos(served) <= window_;
    if (now - refused_at_[k] <= window_ && !served_lately) {
      absl::StrAppend(&out, out.empty() ? "" : "; ", "every new ",
                      kKindNames[k], " call is refused: ", reason_[k]);
    }
  }
  return out;
}

}  // namespace metasrv::server
