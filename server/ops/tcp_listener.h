// A listening TCP socket whose accepts outlive running out of descriptors,
// and the descriptor limits its callers keep headroom under.
//
// gRPC 1.51's own listener stops for good at its first EMFILE, and
// libmicrohttpd's holds a connection slot per peer however slowly it
// writes; both ports accept through this class instead (docs/RELIABILITY.md).
#ifndef METASRV_SERVER_OPS_TCP_LISTENER_H_
#define METASRV_SERVER_OPS_TCP_LISTENER_H_

#include <sys/socket.h>

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace metasrv::server {

// Raises this process's soft RLIMIT_NOFILE to its hard limit, and returns
// the soft limit in effect afterwards.
int RaiseDescriptorLimit();

// The descriptors a kind of connection may take: its accepted socket must be
// below `ceiling`, which leaves the descriptors above it to everything else
// (store connections, files, the other port).
struct DescriptorCeilings {
  int grpc = 0;  // gRPC connections.
  int http = 0;  // HTTP connections (health checks keep some above gRPC's).
  // HTTP connections open at once, so that the HTTP port alone cannot use
  // up what gRPC's connections need.
  int http_connections = 0;
  // For a process limited to `limit` descriptors: a reserve of an eighth
  // (at least 64); gRPC stops below all of it, HTTP below half of it, and
  // HTTP holds a quarter of it at most (16 to 256 connections).
  static DescriptorCeilings For(int limit);
};

// Whether the descriptor a new socket would get now is below `ceiling` (the
// lowest free one; false when none is free). Thread-safe.
bool DescriptorFreeBelow(int ceiling);

// Thread safety: one thread at a time.
class TcpListener {
 public:
  // What Accept() did with the connection waiting first.
  enum class Outcome {
    kAccepted,  // `fd` is the caller's: non-blocking, close-on-exec.
    kNone,      // None was waiting.
    kRefused,   // Its descriptor was at or above the ceiling, or there was
                // none but the spare: closed at once (the peer sees EOF).
    kWait,      // No descriptor free, not even the spare: still queued;
                // call again after a pause.
  };
  struct Accepted {
    Outcome outcome = Outcome::kNone;  // What happened.
    int fd = -1;                       // With kAccepted.
    sockaddr_storage peer{};           // With kAccepted: who.
    socklen_t peer_len = 0;            // Bytes of `peer`.
  };

  // Binds and listens on `addr` (host:port; port 0 picks a free one; "[::]"
  // takes IPv4 too). kInvalidArgument when it does not parse or resolve,
  // kUnavailable when it cannot be bound (in use, not this host's), whose
  // message ends with `choose_hint` when given (which setting to change).
  static absl::StatusOr<std::unique_ptr<TcpListener>> Listen(
      const std::string& addr, absl::string_view choose_hint = {});
  ~TcpListener();
  TcpListener(const TcpListener&) = delete;
  TcpListener& operator=(const TcpListener&) = delete;

  int fd() const { return fd_; }
  int port() const { return port_; }

  // Takes the first waiting connection, if any, keeping only one whose
  // descriptor is below `ceiling`.
  Accepted Accept(int ceiling);

  // Accepts until none waits, handing each kept connection to `on_accepted`
  // and telling `on_refused` of each one closed. Returns false when it
  // stopped on kWait (the caller should pause before the next call).
  bool AcceptAll(int ceiling,
                 const std::function<void(const Accepted&)>& on_accepted,
                 const std::function<void()>& on_refused);

 private:
  TcpListener(int fd, int port) : fd_(fd), port_(port) {}
  // Opens the spare descriptor if it is not open; false if it cannot.
  bool KeepSpare();

  const int fd_;    // The listening socket; owned.
  const int port_;  // The port bound.
  // A descriptor held back (on /dev/null) so that, when every other is in
  // use, a waiting connection can still be taken off the queue and closed
  // rather than left to hang; -1 while it cannot be reopened.
  int spare_ = -1;
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_OPS_TCP_LISTENER_H_
