// The threads that serve every gRPC call: they poll the server's one
// completion queue and run what completes.
//
// gRPC's pollers hand the socket over to each other: with two threads
// waiting on the queue, every message that arrives on an idle server wakes
// one thread to read it and another to take over the polling, two context
// switches for each heartbeat. So one thread polls while it keeps up, and
// more join it only while it is saturated: a server of 10,000 flownodes
// each reporting every 3 s is served by one thread, a closed loop by as many
// as there are cores.
#ifndef METASRV_SERVER_RPC_CQ_POLLER_H_
#define METASRV_SERVER_RPC_CQ_POLLER_H_

#include <grpcpp/completion_queue.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/rpc/grpc151_internals.h"

namespace metasrv::server {

// Thread safety: Start() and Stop() from one thread; the rest from any.
class CqPoller {
 public:
  struct Options {
    // Threads polling at most (at least 1); 0: one per core, at least 2.
    int max_threads = 0;
    // A thread busy for more than this share of a window calls in the next
    // one; a helper busy for less goes back to rest.
    double busy_share = 0.75;
    double idle_share = 0.25;
    absl::Duration window = absl::Milliseconds(2);  // The first thread's.
    absl::Duration helper_window = absl::Milliseconds(10);  // A helper's.
    // A resting helper joins when the last thread to poll has been inside
    // one completion this long (a call that blocks, a huge merge): the
    // queue is never left unpolled behind it.
    absl::Duration stuck_after = absl::Milliseconds(20);
  };

  // Takes the server's completion queue (ServerBuilder::AddCompletionQueue).
  // Every tag it returns must be a CqTag.
  CqPoller(std::unique_ptr<grpc::ServerCompletionQueue> cq, Options options);
  ~CqPoller();
  CqPoller(const CqPoller&) = delete;
  CqPoller& operator=(const CqPoller&) = delete;

  grpc::ServerCompletionQueue* cq() const { return cq_.get(); }

  // Starts the threads: the first polls at once, the others rest.
  void Start();
  // Shuts the queue down (call it once the server has shut down and no
  // operation will start again), runs what is still queued, and joins the
  // threads. Idempotent.
  void Stop();

  // Runs `task` on a poller thread, after what is queued now. Work that
  // starts many operations (a watch push to every watcher) runs better
  // there: their completions come back to a thread that is polling anyway,
  // without waking it for each. Never after Stop() began: then `task` is
  // dropped unrun (it must own nothing that needs running).
  void Post(absl::AnyInvocable<void() &&> task) ABSL_LOCKS_EXCLUDED(mu_);

  // Threads polling now (1 when idle), and how often a helper was called in.
  int polling() const { return polling_.load(std::memory_order_relaxed); }
  uint64_t wakeups() const { return wakeups_.load(std::memory_order_relaxed); }

 private:
  // Thread `index`'s loop: index 0 always polls; helper i polls while more
  // than i threads are wanted.
  void Run(int index);
  // Whether helper `index` may poll now; blocks it while it may not. False
  // once stopping. The next helper to join looks every stuck_after whether
  // the threads polling are all stuck, and joins if so.
  bool WaitForTurn(int index) ABSL_LOCKS_EXCLUDED(mu_);
  // Whether every thread polling now has been inside one completion for
  // longer than stuck_after.
  bool Stuck() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // After a window in which thread `index` was busy for `share` of the time:
  // calls in the next helper, or sends this one back to rest. Returns
  // whether it keeps polling.
  bool Adjust(int index, double share) ABSL_LOCKS_EXCLUDED(mu_);

  const std::unique_ptr<grpc::ServerCompletionQueue> cq_;  // The queue.
  const Options options_;             // As given, max_threads resolved.
  std::vector<std::thread> threads_;  // The pollers; [0] always polls.
  // Per thread: when the completion it runs began (monotonic ns), 0 while
  // it waits on the queue or rests. Written by its thread only.
  std::unique_ptr<std::atomic<int64_t>[]> busy_since_;
  std::atomic<int> polling_{0};                 // Threads polling now.
  std::atomic<uint64_t> wakeups_{0};            // Helpers called in so far.
  absl::Mutex mu_;                              // Guards the fields below.
  int wanted_ ABSL_GUARDED_BY(mu_) = 1;         // Threads that should poll.
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;  // The queue is shut down.
  bool stopped_ = false;                        // Stop() ran; its caller's.
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_RPC_CQ_POLLER_H_
