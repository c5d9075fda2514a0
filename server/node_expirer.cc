#include "server/node_expirer.h"

#include <algorithm>

#include "spdlog/spdlog.h"

namespace metasrv::server {

NodeExpirer::NodeExpirer(core::FlowStateManager* flow_state,
                         absl::Duration period, Metrics* metrics)
    : flow_state_(flow_state), period_(period), metrics_(metrics) {
  thread_ = std::thread([this] { Run(); });
}

absl::Duration NodeExpirer::PeriodFor(absl::Duration ttl) {
  return std::clamp(ttl / 4, absl::Milliseconds(10), absl::Seconds(1));
}

void NodeExpirer::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

void NodeExpirer::Run() {
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      mu_.AwaitWithTimeout(absl::Condition(&stopping_), period_);
      if (stopping_) return;
    }
    absl::StatusOr<uint64_t> expired = flow_state_->ExpireSilentNodes();
    if (!expired.ok()) {
      spdlog::warn("node expiry failed: {}", expired.status().ToString());
    } else if (*expired > 0) {
      spdlog::info("{} silent flownodes expired", *expired);
      if (metrics_ != nullptr) metrics_->NodesExpired(*expired);
    }
  }
}

}  // namespace metasrv::server
