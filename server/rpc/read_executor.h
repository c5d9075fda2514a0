// Runs reads (GetFlowState, ListFlownodes, Cluster reads) off gRPC's
// threads, so that a read of 100,000 flows never delays heartbeats: gRPC's
// threads only hand the work over.
//
// Two bounded queues: small reads (a few flows or keys) go first, and large
// ones may occupy all workers but one, so a small read never waits behind a
// pile of large ones. A full queue refuses new work (kResourceExhausted)
// instead of growing, and is shared by host, max-min: at the bound, work of
// a call cancelled meanwhile gives its place back at once, and then a host
// under its fair share (the bound over the hosts waiting) takes the place
// of the newest work of the host waiting with the most, which is refused.
// Work for a call cancelled meanwhile is the caller's to skip
// (UnaryCall::cancelled()).
#ifndef METASRV_SERVER_RPC_READ_EXECUTOR_H_
#define METASRV_SERVER_RPC_READ_EXECUTOR_H_

#include <cstddef>
#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace metasrv::server {

// How much a read costs.
enum class ReadCost { kSmall, kLarge };

// Thread safety: Schedule() may be called from any thread. The destructor
// runs what is queued, then joins the workers.
class ReadExecutor {
 public:
  struct Options {
    int threads = 2;  // Workers; 0 runs work on the caller's thread.
    size_t max_queued_small = 4096;  // Waiting small reads, at most.
    size_t max_queued_large = 64;    // Waiting large reads, at most.
  };

  explicit ReadExecutor(Options options);
  ~ReadExecutor();
  ReadExecutor(const ReadExecutor&) = delete;
  ReadExecutor& operator=(const ReadExecutor&) = delete;

  // Whose work it is, for the queue's shares.
  struct Owner {
    const void* host = nullptr;  // Its host (CallLedger::Ticket::host()).
    std::function<bool()> cancelled;  // Its call is over: drop it.
    // Ends its call with `status` when another host takes its place.
    std::function<void(const absl::Status&)> refuse;
  };
  // Queues `work`. kResourceExhausted (and `work` dropped) when the queue of
  // its cost is full and its host holds its share of it.
  absl::Status Schedule(ReadCost cost, std::function<void()> work,
                        Owner owner);
  absl::Status Schedule(ReadCost cost, std::function<void()> work);

  // Reads waiting now, of each cost.
  size_t queued(ReadCost cost) const;

 private:
  struct Item {
    std::function<void()> work;
    Owner owner;
  };
  // The queue is full: makes a place for `host` (cancelled work first, then
  // the newest of the host waiting with the most, over its share); whether
  // it did. What was removed goes to `*dropped` (`*refused` for work of
  // another host), to be ended outside the lock.
  bool MakeRoom(std::deque<Item>* queue, size_t limit, const void* host,
                std::vector<Item>* dropped, std::vector<Item>* refused)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Work();

  const Options options_;  // As given.
  // Large reads running at once, at most: every worker but one.
  const int max_large_running_;
  mutable absl::Mutex mu_;  // Guards the fields below.
  std::deque<Item> small_ ABSL_GUARDED_BY(mu_);  // To run first.
  std::deque<Item> large_ ABSL_GUARDED_BY(mu_);  // Then these.
  int large_running_ ABSL_GUARDED_BY(mu_) = 0;  // Large reads running now.
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;  // Destructor started.
  std::vector<std::thread> workers_;            // The threads.
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_RPC_READ_EXECUTOR_H_
