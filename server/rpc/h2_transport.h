// The gRPC port's HTTP/2 transport: event loops (h2_loop.h) that speak
// HTTP/2 through nghttp2, fed by the port's acceptor. Connections are
// shared between hosts at accept: at `max_connections` a new one closes
// the oldest connection of the host holding the most (max-min), so one host
// cannot take the port's descriptors from the others.
#ifndef METASRV_SERVER_RPC_H2_TRANSPORT_H_
#define METASRV_SERVER_RPC_H2_TRANSPORT_H_

#include <sys/socket.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/rpc/h2_loop.h"
#include "server/rpc/h2_tls.h"

namespace metasrv::server {

struct H2TransportOptions {
  H2Limits limits;
  int threads = 1;            // Event loops.
  int max_connections = 0;    // Open at once; 0: no bound.
  int ipv4_prefix_bits = 32;  // What one host is (CallLedger::HostOf).
  // TLS for every connection (borrowed; outlives the transport); null:
  // plaintext.
  H2Tls* tls = nullptr;
};

// Thread safety: all of it, from any thread.
class H2Transport {
 public:
  // `sink` takes every call and outlives the transport.
  H2Transport(const H2TransportOptions& options, CallSink* sink);
  ~H2Transport();  // Stop().
  H2Transport(const H2Transport&) = delete;
  H2Transport& operator=(const H2Transport&) = delete;

  // Starts the loops (named h2-loop-0, h2-loop-1, ...: ops/threads.h).
  void Start();
  // Takes an accepted connection (non-blocking `fd`, its peer address).
  // While too many closes are under way (kClosingSlack) it waits for the
  // loops to finish some, at most kClosingWait, before it closes the
  // newcomer: a flood's burst of evictions does not turn away the honest
  // connection that comes right after it. (Called by the one acceptor
  // thread, which accepts nothing meanwhile.)
  void Adopt(int fd, const sockaddr_storage& peer) ABSL_LOCKS_EXCLUDED(mu_);
  // Runs `tick` about every `period` on the first loop (after Start()).
  void Every(absl::Duration period, std::function<void()> tick) {
    loops_.front()->Every(period, std::move(tick));
  }
  // GOAWAY on every connection (two phases); calls open go on.
  void Shutdown();
  // Closes every connection and stops the loops.
  void Stop();
  // Connections open; those closed to make room for another host's; and
  // those closed at accept while too many closes were under way.
  int64_t connections() const;
  int64_t evicted() const { return evicted_.load(); }
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
  void Forget(uint64_t id) ABSL_LOCKS_EXCLUDED(mu_);

  const H2TransportOptions options_;
  CallSink* const sink_;  // Borrowed; told of evictions.
  std::vector<std::unique_ptr<H2Loop>> loops_;
  std::atomic<int64_t> evicted_{0};
  std::atomic<int64_t> refused_{0};
  // Request bytes held before their messages are whole (H2Limits).
  std::atomic<int64_t> held_requests_{0};

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
