#include "server/rpc/h2_transport.h"

#include <unistd.h>

#include <algorithm>
#include <utility>

#include "server/ops/net_util.h"
#include "server/rpc/call_ledger.h"

namespace metasrv::server {

H2Transport::H2Transport(const H2TransportOptions& options, CallSink* sink)
    : options_(options), sink_(sink) {
  const int threads = std::max(1, options.threads);
  H2Limits limits = options.limits;
  if (limits.max_held_requests > 0) limits.held_requests = &held_requests_;
  for (int i = 0; i < threads; ++i) {
    loops_.push_back(std::make_unique<H2Loop>(
        limits, sink, [this](uint64_t id) { Forget(id); }));
  }
}

H2Transport::~H2Transport() { Stop(); }

void H2Transport::Start() {
  for (size_t i = 0; i < loops_.size(); ++i) {
    loops_[i]->Start(i);
  }
}

void H2Transport::Adopt(int fd, const sockaddr_storage& peer) {
  std::string text = PeerString(peer);
  std::string host = CallLedger::HostOf(text, options_.ipv4_prefix_bits);
  Placed placed{};
  std::optional<Placed> evict;
  std::string evicted_host;
  {
    absl::MutexLock lock(&mu_);
    // Closes still under way (a loop behind a flood of connections) hold
    // descriptors too: past this many in all, the newcomer waits a moment
    // for the loops to close some, then is closed, so that descriptors stay
    // bounded whatever the loops' lag.
    auto room = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return open_ < options_.max_connections + kClosingSlack;
    };
    if (options_.max_connections > 0 &&
        !mu_.AwaitWithTimeout(absl::Condition(&room), kClosingWait)) {
      close(fd);
      refused_.fetch_add(1);
      evicted_host = std::move(host);
    }
  }
  if (!evicted_host.empty()) {
    sink_->OnConnectionEvicted(evicted_host);
    return;
  }
  {
    absl::MutexLock lock(&mu_);
    placed.id = next_id_++;
    placed.loop = static_cast<int>(placed.id % loops_.size());
    if (options_.max_connections > 0 &&
        open_ - static_cast<int64_t>(closing_.size()) >=
            options_.max_connections) {
      // Max-min: the host holding the most gives up its oldest; a host that
      // is that one itself gives up its own oldest.
      auto most = by_host_.end();
      for (auto it = by_host_.begin(); it != by_host_.end(); ++it) {
        if (most == by_host_.end() || it->second.size() > most->second.size()) {
          most = it;
        }
      }
      if (most != by_host_.end()) {
        evicted_host = most->first;
        evict = most->second.front();
        most->second.pop_front();
        host_of_.erase(evict->id);
        if (most->second.empty()) by_host_.erase(most);
        closing_.insert(evict->id);  // Open until its loop closed it.
      }
    }
    by_host_[host].push_back(placed);
    host_of_[placed.id] = std::move(host);
    ++open_;
  }
  if (evict.has_value()) {
    evicted_.fetch_add(1);
    loops_[evict->loop]->Close(evict->id);
    sink_->OnConnectionEvicted(evicted_host);
  }
  loops_[placed.loop]->Adopt(
      fd, placed.id, std::move(text),
      options_.tls != nullptr ? options_.tls->Context() : nullptr);
}

void H2Transport::Forget(uint64_t id) {
  absl::MutexLock lock(&mu_);
  if (closing_.erase(id) > 0) {  // Evicted: closed now.
    --open_;
    return;
  }
  auto it = host_of_.find(id);
  if (it == host_of_.end()) return;
  auto host = by_host_.find(it->second);
  if (host != by_host_.end()) {
    auto& placed = host->second;
    placed.erase(std::remove_if(placed.begin(), placed.end(),
                                [id](const Placed& p) { return p.id == id; }),
                 placed.end());
    if (placed.empty()) by_host_.erase(host);
  }
  host_of_.erase(it);
  --open_;
}

void H2Transport::Shutdown() {
  for (auto& loop : loops_) loop->Shutdown();
}

void H2Transport::Stop() {
  for (auto& loop : loops_) loop->Stop();
}

int64_t H2Transport::connections() const {
  int64_t n = 0;
  for (const auto& loop : loops_) n += loop->connections();
  return n;
}

}  // namespace metasrv::server
