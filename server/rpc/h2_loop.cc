#include "server/rpc/h2_loop.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

#include "server/ops/threads.h"

namespace metasrv::server {
namespace {

// How often deadlines are looked at: the granularity of every limit.
constexpr absl::Duration kTick = absl::Milliseconds(50);

}  // namespace

H2Loop::H2Loop(const H2Limits& limits, CallSink* sink, OnClosed on_closed)
    : limits_(limits),
      sink_(sink),
      on_closed_(std::move(on_closed)),
      epoll_fd_(epoll_create1(EPOLL_CLOEXEC)),
      wake_fd_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = wake_fd_;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev);
}

H2Loop::~H2Loop() {
  Stop();
  close(wake_fd_);
  close(epoll_fd_);
}

void H2Loop::Start(int index) {
  thread_ = StartThread(
      ThreadRole::kTransportLoop, [this] { Run(); }, index);
}

void H2Loop::Wake() {
  const uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof(one));
}

void H2Loop::Post(absl::AnyInvocable<void()> task) {
  {
    absl::MutexLock lock(&mu_);
    if (stopped_) return;
    tasks_.push_back(std::move(task));
  }
  Wake();
}

void H2Loop::Adopt(int fd, uint64_t id, PeerAddress peer, SslContext tls) {
  {
    absl::MutexLock lock(&mu_);
    if (stopped_) {
      close(fd);
      return;
    }
    tasks_.push_back([this, fd, id, peer = std::move(peer),
                      tls = std::move(tls)]() mutable {
      Open& open = open_[fd];
      open.id = id;
      open.conn = std::make_unique<H2Connection>(
          fd, std::move(peer), limits_, sink_, this, absl::Now(),
          std::move(tls));
      fd_of_[id] = fd;
      connections_.fetch_add(1, std::memory_order_relaxed);
      epoll_event ev{};
      ev.events = EPOLLIN | EPOLLRDHUP;
      ev.data.fd = fd;
      epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
      Settle(fd, true);  // Our SETTINGS go first.
    });
  }
  Wake();
}

void H2Loop::Close(uint64_t id) {
  Post([this, id] {
    auto it = fd_of_.find(id);
    if (it != fd_of_.end()) Drop(it->second);
  });
}

void H2Loop::Shutdown() {
  Post([this] {
    std::vector<int> fds;
    for (auto& [fd, open] : open_) {
      open.conn->Shutdown();
      fds.push_back(fd);
    }
    for (int fd : fds) Settle(fd, true);
  });
}

void H2Loop::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopped_) return;
    tasks_.push_back([this] { stop_requested_ = true; });
  }
  Wake();
  if (thread_.joinable()) thread_.join();
  absl::MutexLock lock(&mu_);
  stopped_ = true;
  tasks_.clear();
}

void H2Loop::Drop(int fd) {
  auto it = open_.find(fd);
  if (it == open_.end()) return;
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
  const uint64_t id = it->second.id;
  std::unique_ptr<H2Connection> conn = std::move(it->second.conn);
  open_.erase(it);
  fd_of_.erase(id);
  conn.reset();  // Closes its calls, then the socket.
  connections_.fetch_sub(1, std::memory_order_relaxed);
  if (on_closed_) on_closed_(id);
}

void H2Loop::Settle(int fd, bool alive) {
  auto it = open_.find(fd);
  if (it == open_.end()) return;
  Open& open = it->second;
  if (!alive || !open.conn->Flush(absl::Now())) {
    Drop(fd);
    return;
  }
  const bool want_out = open.conn->wants_write();
  if (want_out != open.polling_out) {
    open.polling_out = want_out;
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP | (want_out ? EPOLLOUT : 0u);
    ev.data.fd = fd;
    epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, fd, &ev);
  }
}

void H2Loop::Every(absl::Duration period, std::function<void()> tick) {
  Post([this, period, tick = std::move(tick)]() mutable {
    periodic_.push_back({period, absl::Now() + period, std::move(tick)});
  });
}

void H2Loop::Run() {
  loop_thread_ = std::this_thread::get_id();
  absl::Time next_tick = absl::Now() + kTick;
  epoll_event events[64];
  while (!stop_requested_) {
    const int wait_ms = static_cast<int>(std::max<int64_t>(
        0, absl::ToInt64Milliseconds(next_tick - absl::Now()) + 1));
    const int n = epoll_wait(epoll_fd_, events, 64, wait_ms);
    std::vector<int> touched;
    for (int i = 0; i < n; ++i) {
      const int fd = events[i].data.fd;
      if (fd == wake_fd_) {
        uint64_t count;
        (void)!read(wake_fd_, &count, sizeof(count));
        continue;
      }
      auto it = open_.find(fd);
      if (it == open_.end()) continue;
      const absl::Time now = absl::Now();
      bool alive = true;
      if ((events[i].events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) !=
          0) {
        alive = it->second.conn->OnReadable(now);
      }
      if (alive && (events[i].events & EPOLLOUT) != 0) {
        alive = it->second.conn->OnWritable(now);
      }
      Settle(fd, alive);
    }
    std::vector<absl::AnyInvocable<void()>> tasks;
    {
      absl::MutexLock lock(&mu_);
      tasks.swap(tasks_);
    }
    for (auto& task : tasks) task();
    const absl::Time now = absl::Now();
    for (Periodic& p : periodic_) {
      if (now < p.next) continue;
      p.next = now + p.period;
      p.tick();
    }
    if (now >= next_tick) {
      next_tick = now + kTick;
      for (auto& [fd, open] : open_) {
        if (!open.conn->Tick(now)) touched.push_back(-fd - 1);
      }
    }
    // The connections the tasks (or ticks) queued output on, each once: not
    // every connection of the loop, however many it holds.
    std::sort(touched_.begin(), touched_.end());
    touched_.erase(std::unique(touched_.begin(), touched_.end()),
                   touched_.end());
    touched.insert(touched.end(), touched_.begin(), touched_.end());
    touched_.clear();
    for (int fd : touched) {
      if (fd < 0) {
        Drop(-fd - 1);
      } else {
        Settle(fd, true);
      }
    }
  }
  std::vector<int> fds;
  for (auto& [fd, open] : open_) fds.push_back(fd);
  for (int fd : fds) Drop(fd);
}

}  // namespace metasrv::server
