// Runs large reads (GetFlowState, Cluster reads) off gRPC's threads, at a
// lower CPU priority, so that a read of 100,000 flows never delays
// heartbeats: gRPC's threads only hand the work over.
#ifndef METASRV_SERVER_READ_EXECUTOR_H_
#define METASRV_SERVER_READ_EXECUTOR_H_

#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace metasrv::server {

// Thread safety: Schedule() may be called from any thread. The destructor
// runs what is queued, then joins the workers.
class ReadExecutor {
 public:
  // `threads` workers, each at `nice` (0 = same priority as the process).
  // With 0 threads, Schedule() runs the work on the caller's thread.
  ReadExecutor(int threads, int nice);
  ~ReadExecutor();
  ReadExecutor(const ReadExecutor&) = delete;
  ReadExecutor& operator=(const ReadExecutor&) = delete;

  void Schedule(std::function<void()> work);

 private:
  void Work(int nice);

  absl::Mutex mu_;                                      // Guards the queue.
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(mu_);  // To run.
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;          // Destructor started.
  std::vector<std::thread> workers_;                    // The threads.
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_READ_EXECUTOR_H_
