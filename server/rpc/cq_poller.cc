#include "server/rpc/cq_poller.h"

#include <grpcpp/alarm.h>
#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace metasrv::server {
namespace {

int Resolve(int max_threads) {
  if (max_threads > 0) return max_threads;
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  return std::max(2, cores);
}

}  // namespace

CqPoller::CqPoller(std::unique_ptr<grpc::ServerCompletionQueue> cq,
                   Options options)
    : cq_(std::move(cq)), options_([&options] {
        Options resolved = options;
        resolved.max_threads = Resolve(options.max_threads);
        return resolved;
      }()) {}

CqPoller::~CqPoller() { Stop(); }

void CqPoller::Start() {
  busy_since_ = std::make_unique<std::atomic<int64_t>[]>(options_.max_threads);
  for (int i = 0; i < options_.max_threads; ++i) busy_since_[i].store(0);
  for (int i = 0; i < options_.max_threads; ++i) {
    threads_.emplace_back([this, i] {
      // Named in top -H and perf: "poller-0" always polls.
      pthread_setname_np(pthread_self(), absl::StrCat("poller-", i).c_str());
      Run(i);
    });
  }
}

namespace {

// A task on the queue: an alarm already due, whose completion runs it.
class PostedTask final : public CqTag {
 public:
  explicit PostedTask(absl::AnyInvocable<void() &&> task)
      : task_(std::move(task)) {}
  void Set(grpc::CompletionQueue* cq) {
    alarm_.Set(cq, gpr_inf_past(GPR_CLOCK_MONOTONIC), AsTag());
  }
  void Complete(bool ok) override {
    if (ok) std::move(task_)();
    delete this;
  }

 private:
  grpc::Alarm alarm_;                   // Due at once; fires on the queue.
  absl::AnyInvocable<void() &&> task_;  // What to run.
};

}  // namespace

void CqPoller::Post(absl::AnyInvocable<void() &&> task) {
  // Under mu_, so that the queue is not shut down between the check and
  // the alarm's Set (a Set on a shut-down queue is a crash in gRPC).
  absl::MutexLock lock(&mu_);
  if (stopping_) return;
  (new PostedTask(std::move(task)))->Set(cq_.get());
}

void CqPoller::Stop() {
  if (stopped_) return;
  stopped_ = true;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;  // Resting helpers leave; the queue drains.
  }
  cq_->Shutdown();
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

bool CqPoller::Stuck() const {
  const int64_t now = absl::GetCurrentTimeNanos();
  const int64_t limit = absl::ToInt64Nanoseconds(options_.stuck_after);
  for (int i = 0; i < wanted_; ++i) {
    const int64_t since = busy_since_[i].load(std::memory_order_relaxed);
    if (since == 0 || now - since < limit) return false;
  }
  return true;
}

bool CqPoller::WaitForTurn(int index) {
  absl::MutexLock lock(&mu_);
  auto go = [this, index]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return stopping_ || wanted_ > index;
  };
  auto next = [this, index]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return stopping_ || wanted_ >= index;
  };
  while (!go()) {
    if (wanted_ < index) {
      mu_.Await(absl::Condition(&next));
      continue;
    }
    // The next to join keeps an eye on the threads polling.
    if (!mu_.AwaitWithTimeout(absl::Condition(&go), options_.stuck_after) &&
        Stuck()) {
      ++wanted_;
      wakeups_.fetch_add(1, std::memory_order_relaxed);
    }
  }
  // Stopping: the queue is shut down, and the threads still polling drain
  // it (a Next() after its shutdown event returns at once).
  return !stopping_;
}

bool CqPoller::Adjust(int index, double share) {
  absl::MutexLock lock(&mu_);
  if (stopping_) return true;  // Keep polling until the queue is drained.
  if (share > options_.busy_share && wanted_ == index + 1 &&
      wanted_ < options_.max_threads) {
    ++wanted_;  // Saturated: the next thread joins.
    wakeups_.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  // The last helper to join leaves first, once it has little to do.
  if (index > 0 && index == wanted_ - 1 && share < options_.idle_share) {
    --wanted_;
    return false;
  }
  return true;
}

void CqPoller::Run(int index) {
  const absl::Duration window =
      index == 0 ? options_.window : options_.helper_window;
  // A helper waits for work only briefly, so that it sees it is idle.
  const auto wait =
      index == 0 ? std::chrono::seconds(1)
                 : std::chrono::milliseconds(absl::ToInt64Milliseconds(window));
  while (true) {
    if (index > 0 && !WaitForTurn(index)) return;
    polling_.fetch_add(1, std::memory_order_relaxed);
    absl::Time window_start = absl::Now();
    absl::Duration busy = absl::ZeroDuration();
    bool keep_polling = true;
    while (keep_polling) {
      void* tag = nullptr;
      bool ok = false;
      const grpc::CompletionQueue::NextStatus got =
          cq_->AsyncNext(&tag, &ok, std::chrono::system_clock::now() + wait);
      if (got == grpc::CompletionQueue::SHUTDOWN) {
        polling_.fetch_sub(1, std::memory_order_relaxed);
        return;
      }
      const absl::Time start = absl::Now();
      if (got == grpc::CompletionQueue::GOT_EVENT) {
        busy_since_[index].store(absl::ToUnixNanos(start),
                                 std::memory_order_relaxed);
        CqTag::From(tag)->Complete(ok);
        busy_since_[index].store(0, std::memory_order_relaxed);
      }
      const absl::Time end = absl::Now();
      busy += end - start;
      if (end - window_start >= window) {
        keep_polling =
            Adjust(index, absl::FDivDuration(busy, end - window_start));
        window_start = end;
        busy = absl::ZeroDuration();
      }
    }
    polling_.fetch_sub(1, std::memory_order_relaxed);
  }
}

}  // namespace metasrv::server
