#include "server/read_executor.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace metasrv::server {

ReadExecutor::ReadExecutor(int threads, int nice) {
  for (int i = 0; i < threads; ++i) {
    workers_.emplace_back([this, nice] { Work(nice); });
  }
}

ReadExecutor::~ReadExecutor() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  for (std::thread& t : workers_) t.join();
}

void ReadExecutor::Schedule(std::function<void()> work) {
  if (workers_.empty()) {
    work();  // No workers: run on the caller's thread.
    return;
  }
  absl::MutexLock lock(&mu_);
  queue_.push_back(std::move(work));
}

void ReadExecutor::Work(int nice) {
  // On Linux a thread's nice value is its own; best effort.
  if (nice != 0) {
    setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), nice);
  }
  while (true) {
    std::function<void()> work;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopping_ || !queue_.empty();
      };
      mu_.Await(absl::Condition(&ready));
      if (queue_.empty()) return;  // Stopping, and nothing left.
      work = std::move(queue_.front());
      queue_.pop_front();
    }
    work();
  }
}

}  // namespace metasrv::server
