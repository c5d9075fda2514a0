#include "server/rpc/read_executor.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/ops/threads.h"

namespace metasrv::server {

ReadExecutor::ReadExecutor(Options options)
    : options_(options), max_large_running_(std::max(1, options.threads - 1)) {
  for (int i = 0; i < options_.threads; ++i) {
    workers_.push_back(
        StartThread(ThreadRole::kReadWorker, [this] { Work(); }, i));
  }
}

ReadExecutor::~ReadExecutor() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  for (std::thread& t : workers_) t.join();
}

absl::Status ReadExecutor::Schedule(ReadCost cost, std::function<void()> work) {
  if (workers_.empty()) {
    work();  // No workers: run on the caller's thread.
    return absl::OkStatus();
  }
  absl::MutexLock lock(&mu_);
  const bool small = cost == ReadCost::kSmall;
  auto& queue = small ? small_ : large_;
  const size_t limit =
      small ? options_.max_queued_small : options_.max_queued_large;
  if (queue.size() >= limit) {
    return absl::ResourceExhaustedError(
        absl::StrCat("too many ", small ? "small" : "large", " reads waiting (",
                     limit, "); retry later"));
  }
  queue.push_back(std::move(work));
  return absl::OkStatus();
}

size_t ReadExecutor::queued(ReadCost cost) const {
  absl::MutexLock lock(&mu_);
  return cost == ReadCost::kSmall ? small_.size() : large_.size();
}

void ReadExecutor::Work() {
  while (true) {
    std::function<void()> work;
    bool large = false;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopping_ || !small_.empty() ||
               (!large_.empty() && large_running_ < max_large_running_);
      };
      mu_.Await(absl::Condition(&ready));
      if (!small_.empty()) {
        work = std::move(small_.front());
        small_.pop_front();
      } else if (!large_.empty() && large_running_ < max_large_running_) {
        work = std::move(large_.front());
        large_.pop_front();
        large = true;
        ++large_running_;
      } else {
        return;  // Stopping, and nothing this worker may run.
      }
    }
    work();
    if (large) {
      absl::MutexLock lock(&mu_);
      --large_running_;
    }
  }
}

}  // namespace metasrv::server
