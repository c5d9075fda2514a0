// Runs reads (GetFlowState, ListFlownodes, Cluster reads) off gRPC's
// threads, so that a read of 100,000 flows never delays heartbeats: gRPC's
// threads only hand the work over.
//
// Two bounded queues: small reads (a few flows or keys) go first, and large
// ones may occupy all workers but one, so a small read never waits behind a
// pile of large ones. A full queue refuses new work (kResourceExhausted)
// instead of growing; work for a call that was cancelled meanwhile is the
// caller's to skip (UnaryCall::cancelled()).
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

  // Queues `work`. kResourceExhausted (and `work` dropped) when the queue of
  // its cost is full.
  absl::Status Schedule(ReadCost cost, std::function<void()> work);

  // Reads waiting now, of each cost.
  size_t queued(ReadCost cost) const;

 private:
  void Work();

  const Options options_;  // As given.
  // Large reads running at once, at most: every worker but one.
  const int max_large_running_;
  mutable absl::Mutex mu_;  // Guards the fields below.
  std::deque<std::function<void()>> small_
      ABSL_GUARDED_BY(mu_);  // To run first.
  std::deque<std::function<void()>> large_ ABSL_GUARDED_BY(mu_);  // Then these.
  int large_running_ ABSL_GUARDED_BY(mu_) = 0;  // Large reads running now.
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;  // Destructor started.
  std::vector<std::thread> workers_;            // The threads.
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_RPC_READ_EXECUTOR_H_
