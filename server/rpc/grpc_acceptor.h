// Accepts the gRPC port's connections on our own TcpListener and hands them
// to the transport, so that running out of descriptors pauses accepting
// instead of ending it, and gRPC connections always leave descriptors to the
// rest of the process.
#ifndef METASRV_SERVER_RPC_GRPC_ACCEPTOR_H_
#define METASRV_SERVER_RPC_GRPC_ACCEPTOR_H_

#include <sys/socket.h>

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "server/ops/tcp_listener.h"

namespace metasrv::server {

// Thread safety: Accepting() may be called from any thread; the rest from
// one at a time (port() after Listen()).
class GrpcAcceptor {
 public:
  // What it tells of, on its thread; either may be empty.
  struct Listeners {
    // Each connection closed at accept.
    std::function<void()> on_refused;
    // Whether connections can be taken (Accepting()), each time that
    // changes.
    std::function<void(bool)> on_accepting;
  };

  // Keeps connections whose descriptor is below `descriptor_ceiling`.
  explicit GrpcAcceptor(int descriptor_ceiling);
  ~GrpcAcceptor();  // Stops.
  GrpcAcceptor(const GrpcAcceptor&) = delete;
  GrpcAcceptor& operator=(const GrpcAcceptor&) = delete;

  // Binds and listens on `addr` (TcpListener::Listen's errors). Once,
  // before Start().
  absl::Status Listen(const std::string& addr);
  // Takes an accepted connection: its descriptor (non-blocking, theirs to
  // close) and its peer's address.
  using Handover = std::function<void(int fd, const sockaddr_storage& peer)>;
  // Starts accepting into `into` (the transport, once it has started).
  // Once.
  void Start(Handover into, Listeners listeners);
  // Stops accepting and closes the listening socket (connecting peers are
  // refused). Idempotent.
  void Stop();

  // The port bound; 0 before Listen().
  int port() const { return port_; }
  // Whether a connection arriving now would be kept: a descriptor below the
  // ceiling is free.
  bool Accepting() const;

 private:
  // The thread: accepts as connections come, and while it cannot (out of
  // descriptors, or at the ceiling) looks again every so often.
  void Run();

  // Connections: set by Listen(), null again once stopped.
  std::unique_ptr<TcpListener> listener_;
  int port_ = 0;                  // listener_'s port; set by Listen().
  const int descriptor_ceiling_;  // As given.
  Handover into_;  // Set by Start().
  Listeners listeners_;  // Set by Start().
  int stop_fd_ = -1;     // eventfd: written to stop Run().
  std::thread thread_;   // Runs Run() once started.
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_RPC_GRPC_ACCEPTOR_H_
