#include "server/rpc/read_executor.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/fair_share.h"
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

absl::Status ReadExecutor::Schedule(ReadCost cost, std::function<void()> work,
                                   Owner owner) {
  if (workers_.empty()) {
    work();  // No workers: run on the caller's thread.
    return absl::OkStatus();
  }
  const bool small = cost == ReadCost::kSmall;
  const size_t limit =
      small ? options_.max_queued_small : options_.max_queued_large;
  std::vector<Item> dropped, refused;
  absl::Status queued;
  {
    absl::MutexLock lock(&mu_);
    auto& queue = small ? small_ : large_;
    if (queue.size() < limit ||
        MakeRoom(&queue, limit, owner.host, &dropped, &refused)) {
      queue.push_back(Item{std::move(work), std::move(owner)});
    } else {
      queued = absl::ResourceExhaustedError(absl::StrCat(
          "too many ", small ? "small" : "large", " reads waiting (", limit,
          ") and this client's host waits with its share of them; retry "
          "later"));
    }
  }
  // Outside the lock: a cancelled call's work finishes it as cancelled.
  for (Item& item : dropped) item.work();
  for (Item& item : refused) {
    item.owner.refuse(absl::ResourceExhaustedError(
        "a large read waiting was ended to make room for another client "
        "host's (its host held more than its share of the read queue); "
        "retry later"));
  }
  return queued;
}

absl::Status ReadExecutor::Schedule(ReadCost cost,
                                   std::function<void()> work) {
  return Schedule(cost, std::move(work), Owner());
}

bool ReadExecutor::MakeRoom(std::deque<Item>* queue, size_t limit,
                            const void* host, std::vector<Item>* dropped,
                            std::vector<Item>* refused) {
  // Work whose call is over gives its place back.
  for (auto it = queue->begin(); it != queue->end();) {
    if (it->owner.cancelled && it->owner.cancelled()) {
      dropped->push_back(std::move(*it));
      it = queue->erase(it);
    } else {
      ++it;
    }
  }
  if (queue->size() < limit) return true;
  if (host == nullptr) return false;
  core::FairShare<const void*> fair(static_cast<int64_t>(limit), host);
  for (const Item& item : *queue) {
    if (item.owner.host != nullptr) fair.Count(item.owner.host);
  }
  if (!fair.AskerMayTake()) return false;
  const auto over = fair.Over();
  if (over.empty()) return false;
  const void* most = over.front().second;
  for (auto it = queue->rbegin(); it != queue->rend(); ++it) {
    if (it->owner.host == most && it->owner.refuse) {
      refused->push_back(std::move(*it));
      queue->erase(std::next(it).base());
      return true;
    }
  }
  return false;
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
        work = std::move(small_.front().work);
        small_.pop_front();
      } else if (!large_.empty() && large_running_ < max_large_running_) {
        work = std::move(large_.front().work);
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
