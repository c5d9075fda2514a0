// The gRPC port's HTTP/2 transport: it accepts the port's connections on its
// own thread (through a TcpListener, so that running out of descriptors
// pauses accepting instead of ending it, and gRPC's connections leave
// descriptors to the rest of the process) and serves them on event loops
// (h2_loop.h) that speak HTTP/2 through nghttp2. Connections are shared
// between hosts at accept: at `max_connections` a new one closes the oldest
// connection of the host holding the most (max-min), so one host cannot
// take the port's descriptors from the others.
#ifndef METASRV_SERVER_RPC_H2_TRANSPORT_H_
#define METASRV_SERVER_RPC_H2_TRANSPORT_H_

#include <sys/socket.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/ops/tcp_listener.h"
#include "server/rpc/h2_loop.h"
#include "server/rpc/h2_tls.h"

namespace metasrv::server {

struct H2TransportOptions {
  H2Limits limits;
  int threads = 0;  // Event loops (--transport_threads); 0: one per core.
  int max_connections = 0;    // Open at once; 0: no bound.
  int ipv4_prefix_bits = 32;  // What one host is (PeerOf).
  // TLS for every connection (borrowed; outlives the transport); null:
  // plaintext.
  H2Tls* tls = nullptr;
  // An accepted connection whose descriptor would be at or above this is
  // closed at once; 0: DescriptorCeilings' gRPC ceiling for this process's
  // limit.
  int descriptor_ceiling = 0;
};

// Thread safety: all of it, from any thread.
class H2Transport {
 public:
  // `sink` takes every call and outlives the transport.
  H2Transport(const H2TransportOptions& options, CallSink* sink);
  ~H2Transport();  // Stop().
  H2Transport(const H2Transport&) = delete;
  H2Transport& operator=(const H2Transport&) = delete;

  // What the acceptor thread tells of, on that thread; either may be empty.
  struct AcceptListeners {
    std::function<void()> on_refused;  // Each connection closed at accept.
    // Whether connections can be taken (Accepting()), each time that
    // changes.
    std::function<void(bool)> on_accepting;
  };
  // Starts the loops (named h2-loop-0, h2-loop-1, ...: ops/threads.h), then
  // the acceptor thread on `listener` (bound by TcpListener::Listen).
  void Start(std::unique_ptr<TcpListener> listener,
             AcceptListeners listeners = {});
  // Stops accepting and closes the listening socket (connecting peers are
  // refused); connections open go on. Idempotent.
  void StopAccepting();
  // Whether a connection arriving now would be kept: a descriptor below the
  // ceiling is free.
  bool Accepting() const { return DescriptorFreeBelow(descriptor_ceiling_); }
  // Runs `tick` about every `period` on the first loop (after Start()).
  void Every(absl::Duration period, std::function<void()> tick) {
    loops_.front()->Every(period, std::move(tick));
  }
  // GOAWAY on every connection (two phases); calls open go on.
  void Shutdown();
  // Stops accepting, closes every connection and stops the loops.
  void Stop();
  // Connections open; those closed to make room for another host's; and
  // those closed at accept while too many closes were under way.
  int64_t connections() const;
  int64_t evicted() const { return evicted_.load(); }
  // Request bytes held before their messages are whole or asked for.
  int64_t held_request_bytes() const {
    return held_requests_ != nullptr ? held_requests_->held() : 0;
  }
  int64_t refused() const { return refused_.load(); }
  // Evicted connections whose loop has not closed them yet, at most, beyond
  // max_connections: past that, a new connection is closed at accept.
  static constexpr int64_t kClosingSlack = 64;
  static constexpr absl::Duration kClosingWait = absl::Milliseconds(500);

 private:
  struct Placed {
    uint64_t id;
    int loop;
  };
  // The acceptor thread: accepts as connections come, and while it cannot
  // (out of descriptors, or at the ceiling) looks again every so often.
  void AcceptLoop(TcpListener* listener, AcceptListeners listeners);
  // Takes an accepted connection (non-blocking `fd`, its peer address).
  // While too many closes are under way (kClosingSlack) it waits for the
  // loops to finish some, at most kClosingWait, before it closes the
  // newcomer: a flood's burst of evictions does not turn away the honest
  // connection that comes right after it (the acceptor accepts nothing
  // meanwhile).
  void Adopt(int fd, const sockaddr_storage& peer) ABSL_LOCKS_EXCLUDED(mu_);
  void Forget(uint64_t id) ABSL_LOCKS_EXCLUDED(mu_);

  const H2TransportOptions options_;
  const int descriptor_ceiling_;  // As resolved from the options.
  CallSink* const sink_;          // Borrowed; told of evictions.
  std::vector<std::unique_ptr<H2Loop>> loops_;
  std::unique_ptr<TcpListener> listener_;  // Set by Start().
  int stop_fd_ = -1;      // eventfd: written to stop AcceptLoop().
  std::thread acceptor_;  // Runs AcceptLoop() once started.
  std::atomic<int64_t> evicted_{0};
  std::atomic<int64_t> refused_{0};
  // Request bytes held before their messages are whole (H2Limits).
  std::unique_ptr<HostBudget> held_requests_;  // Null: no bound.
  // Resets by host, shared by the host's connections (H2Limits): the
  // client's of unanswered calls, at twice a connection's burst and rate;
  // and the server's for stream errors, kErrorResets (as h2's 1,024 local
  // error resets per connection), refilled over a minute.
  static constexpr double kErrorResets = 1024;
  HostResets early_resets_{2.0 * options_.limits.reset_burst(),
                           2.0 * options_.limits.reset_rate()};
  HostResets error_resets_{kErrorResets, kErrorResets / 60};
  // Bytes compressed requests may inflate to a second, over all hosts,
  // shared max-min (HostInflation): the CPU of a flood of compression
  // bombs.
  static constexpr int64_t kInflatedPerSecond = 64 << 20;
  HostInflation inflation_{kInflatedPerSecond};

  absl::Mutex mu_;  // Guards the bookkeeping of connections by host.
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  int64_t open_ ABSL_GUARDED_BY(mu_) = 0;
  // Each host's connections, oldest first.
  absl::flat_hash_map<std::string, std::deque<Placed>> by_host_
      ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uint64_t, std::string> host_of_ ABSL_GUARDED_BY(mu_);
  // Evicted, and not yet closed by their loop (open_ counts them).
  absl::flat_hash_set<uint64_t> closing_ ABSL_GUARDED_BY(mu_);
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_RPC_H2_TRANSPORT_H_
