// One event loop of the gRPC port: a thread on epoll that owns the
// connections handed to it (h2_connection.h) and runs what other threads
// post to it. A call's owner that lives on another thread (an executor, the
// watch hub) reaches its call only through Post().
#ifndef METASRV_SERVER_RPC_H2_LOOP_H_
#define METASRV_SERVER_RPC_H2_LOOP_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/functional/any_invocable.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/rpc/h2_connection.h"

namespace metasrv::server {

// Thread safety: Adopt(), Post(), Close(), Shutdown() and Stop() from any
// thread; the connections only on the loop's own.
class H2Loop {
 public:
  // Told on the loop's thread when a connection it adopted with `id` is
  // closed (by either side, a deadline or Close()).
  using OnClosed = std::function<void(uint64_t id)>;

  H2Loop(const H2Limits& limits, CallSink* sink, OnClosed on_closed);
  ~H2Loop();  // Stop().
  H2Loop(const H2Loop&) = delete;
  H2Loop& operator=(const H2Loop&) = delete;

  // Starts the thread, the transport's loop number `index` (ops/threads.h
  // names it).
  void Start(int index);
  // Takes `fd` as connection `id` from `peer`, over TLS with `tls` (null:
  // plaintext). After Stop(), closes it.
  void Adopt(int fd, uint64_t id, PeerAddress peer, SslContext tls = nullptr)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Runs `task` on the loop's thread, soon. Dropped after Stop().
  void Post(absl::AnyInvocable<void()> task) ABSL_LOCKS_EXCLUDED(mu_);
  // Whether the caller is the loop's own thread.
  bool InLoop() const { return std::this_thread::get_id() == loop_thread_; }
  // Runs `tick` on the loop's thread about every `period`.
  void Every(absl::Duration period, std::function<void()> tick);
  // Closes connection `id` if it is still open.
  void Close(uint64_t id);
  // GOAWAY, in two phases, on every connection; new ones are still served
  // until Stop().
  void Shutdown();
  // Closes every connection and joins the thread. Idempotent.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);
  // Loop thread: `fd`'s connection has output to flush this turn (a task
  // queued on one of its streams).
  void Touch(int fd) { touched_.push_back(fd); }
  // Connections open (the loop's count, read from any thread).
  int64_t connections() const {
    return connections_.load(std::memory_order_relaxed);
  }

 private:
  struct Open {
    uint64_t id;
    std::unique_ptr<H2Connection> conn;
    bool polling_out = false;  // EPOLLOUT is asked for.
  };
  void Run();
  void Wake();
  // Flushes `fd`'s connection and polls it for what it waits for; closes
  // it if it is over (`alive` false, or the flush fails).
  void Settle(int fd, bool alive);
  void Drop(int fd);

  const H2Limits limits_;
  CallSink* const sink_;
  const OnClosed on_closed_;
  const int epoll_fd_;
  const int wake_fd_;
  std::thread thread_;
  std::atomic<std::thread::id> loop_thread_{};
  struct Periodic {
    absl::Duration period;
    absl::Time next;
    std::function<void()> tick;
  };
  std::vector<Periodic> periodic_;  // Set by Every(); loop thread only.
  std::vector<int> touched_;        // By Touch(); loop thread only.
  std::atomic<int64_t> connections_{0};
  absl::flat_hash_map<int, Open> open_;  // By descriptor; loop thread only.
  absl::flat_hash_map<uint64_t, int> fd_of_;  // Loop thread only.

  absl::Mutex mu_;  // Guards what is handed to the loop.
  std::vector<absl::AnyInvocable<void()>> tasks_ ABSL_GUARDED_BY(mu_);
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  bool stop_requested_ = false;  // Loop thread only, set by a task.
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_RPC_H2_LOOP_H_
