#include "server/ops/node_expirer.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "spdlog/spdlog.h"
#include "server/ops/threads.h"

namespace metasrv::server {

NodeExpirer::NodeExpirer(core::FlowStateManager* flow_state,
                         absl::Duration period, Metrics* metrics)
    : flow_state_(flow_state),
      period_(period),
      metrics_(Metrics::OrDiscard(metrics)) {
  thread_ = StartThread(ThreadRole::kNodeExpirer, [this] { Run(); });
}

absl::Duration NodeExpirer::PeriodFor(absl::Duration report_ttl,
                                      absl::Duration idle_ttl) {
  absl::Duration ttl = absl::InfiniteDuration();
  for (absl::Duration set : {report_ttl, idle_ttl}) {
    if (set > absl::ZeroDuration()) ttl = std::min(ttl, set);
  }
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
    const core::IdleExpiry idle = flow_state_->ExpireIdleNodes();
    if (idle.cluster_nodes + idle.records > 0) {
      spdlog::info(
          "idle nodes forgotten (--node_max_idle_time): {} cluster-info "
          "keys, {} flownode records (their flow state stays)",
          idle.cluster_nodes, idle.records);
    }
    const std::vector<uint64_t> expired = flow_state_->ExpireSilentNodes();
    if (!expired.empty()) {
      // Named, up to a bound: an expiry of thousands is one short line.
      constexpr size_t kNamed = 20;
      std::string named = absl::StrJoin(
          expired.begin(), expired.begin() + std::min(expired.size(), kNamed),
          ", ");
      if (expired.size() > kNamed) {
        absl::StrAppend(&named, " and ", expired.size() - kNamed, " more");
      }
      spdlog::info("{} silent flownodes expired: {}", expired.size(), named);
      metrics_->NodesExpired(expired.size());
    }
  }
}

}  // namespace metasrv::server
