#include "server/rpc/h2_transport.h"

#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <thread>
#include <utility>

#include "core/fair_share.h"
#include "server/ops/net_util.h"
#include "server/ops/threads.h"

namespace metasrv::server {

namespace {

// A write to a socket its peer closed fails with EPIPE instead of killing
// the process (TLS writes go through OpenSSL): once, for the process.
void IgnoreSigpipe() {
  static const bool ignored = signal(SIGPIPE, SIG_IGN) != SIG_ERR;
  (void)ignored;
}

}  // namespace

H2Transport::H2Transport(const H2TransportOptions& options, CallSink* sink)
    : options_(options),
      descriptor_ceiling_(
          options.descriptor_ceiling > 0
              ? options.descriptor_ceiling
              : DescriptorCeilings::For(RaiseDescriptorLimit()).grpc),
      sink_(sink),
      stop_fd_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  IgnoreSigpipe();
  const int threads =
      options.threads > 0
          ? options.threads
          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  H2Limits limits = options.limits;
  if (limits.max_held_requests > 0) {
    held_requests_ = std::make_unique<HostBudget>(
        static_cast<int64_t>(limits.max_held_requests));
    limits.held_requests = held_requests_.get();
  }
  limits.early_resets = &early_resets_;
  limits.error_resets = &error_resets_;
  limits.inflation = &inflation_;
  for (int i = 0; i < threads; ++i) {
    loops_.push_back(std::make_unique<H2Loop>(
        limits, sink, [this](uint64_t id) { Forget(id); }));
  }
}

H2Transport::~H2Transport() {
  Stop();
  if (stop_fd_ >= 0) close(stop_fd_);
}

void H2Transport::Start(std::unique_ptr<TcpListener> listener,
                        AcceptListeners listeners) {
  for (size_t i = 0; i < loops_.size(); ++i) {
    loops_[i]->Start(i);
  }
  listener_ = std::move(listener);
  acceptor_ = StartThread(ThreadRole::kAcceptor,
                          [this, listener = listener_.get(),
                           listeners = std::move(listeners)]() mutable {
                            AcceptLoop(listener, std::move(listeners));
                          });
}

void H2Transport::StopAccepting() {
  if (acceptor_.joinable()) {
    const uint64_t one = 1;
    (void)!write(stop_fd_, &one, sizeof(one));
    acceptor_.join();
  }
  listener_.reset();
}

void H2Transport::AcceptLoop(TcpListener* listener, AcceptListeners listeners) {
  const int ceiling = descriptor_ceiling_;
  bool accepting = true;  // As last told to on_accepting.
  bool paused = false;    // Out of descriptors: connections wait queued.
  const auto adopt = [this](const TcpListener::Accepted& accepted) {
    Adopt(accepted.fd, accepted.peer);  // Ours from here.
  };
  const auto refused = [&listeners] {
    if (listeners.on_refused) listeners.on_refused();
  };
  for (;;) {
    const int timeout_ms = paused ? 50 : (accepting ? -1 : 1000);
    pollfd fds[2] = {
        {stop_fd_, POLLIN, 0},
        {listener->fd(), static_cast<short>(paused ? 0 : POLLIN), 0}};
    poll(fds, 2, timeout_ms);
    if (fds[0].revents != 0) return;
    if (paused || fds[1].revents != 0) {
      paused = !listener->AcceptAll(ceiling, adopt, refused);
    }
    const bool now = !paused && Accepting();
    if (now != accepting) {
      accepting = now;
      if (listeners.on_accepting) listeners.on_accepting(now);
    }
  }
}

void H2Transport::Adopt(int fd, const sockaddr_storage& peer) {
  PeerAddress address = PeerOf(peer, options_.ipv4_prefix_bits);
  std::string host = address.host;
  const absl::Time now = absl::Now();
  if (!early_resets_.Allowed(host, now) || !error_resets_.Allowed(host, now)) {
    // Over its reset budget lately: slowed, not served, until it refills.
    close(fd);
    refused_.fetch_add(1);
    sink_->OnConnectionRefused(host, /*slowed=*/true);
    return;
  }
  Placed placed{};
  std::optional<Placed> evict;
  std::string evicted_host;
  bool refused = false;
  {
    absl::MutexLock lock(&mu_);
    // Closes still under way (a loop behind a flood of connections) hold
    // descriptors too: past this many in all, the newcomer waits a moment
    // for the loops to close some, then is closed, so that descriptors stay
    // bounded whatever the loops' lag.
    auto room = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return open_ < options_.max_connections + kClosingSlack;
    };
    refused = options_.max_connections > 0 &&
              !mu_.AwaitWithTimeout(absl::Condition(&room), kClosingWait);
  }
  if (refused) {
    close(fd);
    refused_.fetch_add(1);
    sink_->OnConnectionRefused(host, /*slowed=*/false);
    return;
  }
  {
    absl::MutexLock lock(&mu_);
    placed.id = next_id_++;
    placed.loop = static_cast<int>(placed.id % loops_.size());
    if (options_.max_connections > 0 &&
        open_ - static_cast<int64_t>(closing_.size()) >=
            options_.max_connections) {
      // Max-min: for a host under its share, the host holding the most
      // gives up its oldest; a host at its share gives up its own oldest.
      core::FairShare<absl::string_view> fair(options_.max_connections, host);
      for (const auto& [key, placed] : by_host_) {
        fair.Count(key, static_cast<int64_t>(placed.size()));
      }
      const auto over = fair.Over();
      auto most = by_host_.find(fair.AskerMayTake() && !over.empty()
                                    ? over.front().second
                                    : absl::string_view(host));
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
      fd, placed.id, std::move(address),
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
  StopAccepting();
  for (auto& loop : loops_) loop->Stop();
}

int64_t H2Transport::connections() const {
  int64_t n = 0;
  for (const auto& loop : loops_) n += loop->connections();
  return n;
}

}  // namespace metasrv::server
