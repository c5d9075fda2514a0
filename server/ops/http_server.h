// A small HTTP/1.1 server for operators: /metrics, /health, /ready.
// libmicrohttpd parses and answers; one thread of ours accepts (through a
// TcpListener) and drives it, and keeps every connection moving: each
// request must be answered within the request deadline of the connection's
// start or its previous answer, or the connection is closed; and at the
// connection limit, a new connection closes the one that has waited longest,
// so that slow or idle peers cannot keep health checks out.
#ifndef METASRV_SERVER_OPS_HTTP_SERVER_H_
#define METASRV_SERVER_OPS_HTTP_SERVER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "server/ops/tcp_listener.h"

struct MHD_Daemon;
struct MHD_Connection;

namespace metasrv::server {

// What a handler answers.
struct HttpAnswer {
  int status = 200;                                        // HTTP status code.
  std::string content_type = "text/plain; charset=utf-8";  // Its type.
  std::string body;                                        // Its body.
};

// Why a connection was closed by us rather than by its peer.
enum class HttpDrop {
  kLate,     // Its request was not answered within the deadline.
  kEvicted,  // At the limit, a new connection took its place.
  kRefused,  // Refused at accept: no descriptor to spare.
};

// Thread safety: handlers run on the server's thread, one at a time; they
// must be quick and thread-safe with respect to the rest of the process.
// Port() and Serve() may be called from any thread.
class HttpServer {
 public:
  using Handler = std::function<HttpAnswer()>;
  // GET (and HEAD) of each path; anything else is 404, other methods 405.
  using Routes = absl::flat_hash_map<std::string, Handler>;

  struct Options {
    // A request must be answered within this of the connection's start or
    // of its previous answer (which bounds keep-alive idling too).
    absl::Duration request_deadline = absl::Seconds(10);
    int max_connections = 256;  // Open at once.
    // Connections whose descriptor would be at or above this are refused;
    // 0: DescriptorCeilings' HTTP ceiling for this process's limit.
    int descriptor_ceiling = 0;
    // Told of every connection we close; may be empty. Runs on the
    // server's thread.
    std::function<void(HttpDrop)> on_drop;
  };

  // Serves `routes` on `addr` (host:port; port 0 picks one). kUnavailable
  // naming the address when it cannot listen; kInvalidArgument for an
  // address that does not parse.
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(
      const std::string& addr, Routes routes, Options options);
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(
      const std::string& addr, Routes routes) {
    return Start(addr, std::move(routes), Options());
  }
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const { return listener_->port(); }
  // Calls `path`'s handler (for tests and for the server itself).
  HttpAnswer Serve(const std::string& path) const;

 private:
  // A connection MHD holds, as our thread tracks it.
  struct Connection {
    int fd = -1;           // Its socket (MHD owns it).
    absl::Time since;      // Start, or the end of its previous request.
    bool closing = false;  // Shut down by us; MHD has yet to close it.
  };
  class Callbacks;

  HttpServer(std::unique_ptr<TcpListener> listener, Routes routes,
             Options options);
  // The thread: waits on the listener, MHD and the stop signal, and runs
  // the three in turn until stopped.
  void Run();
  // What is left waiting on the listener after AcceptWaiting().
  enum class Backlog {
    kDrained,  // Nothing.
    kMore,     // More than one turn takes: go on after MHD has run.
    kPaused,   // Out of descriptors: try again shortly.
  };
  // Accepts up to a turn's worth of what waits.
  Backlog AcceptWaiting();
  // Makes room for one more connection; false if there is none to make.
  bool MakeRoom();
  // Closes (shuts down) every connection past its deadline.
  void CloseLate(absl::Time now);
  // Shuts `connection` down for MHD to close, and reports why.
  void Close(Connection* connection, HttpDrop why);
  // How many connections are open and not yet being closed.
  int Live() const { return live_; }
  void Report(HttpDrop why) const;

  const Routes routes_;                    // By path.
  const Options options_;                  // As started.
  std::unique_ptr<TcpListener> listener_;  // Where connections come from.
  MHD_Daemon* daemon_ = nullptr;           // libmicrohttpd's; owned.
  int stop_fd_ = -1;                       // eventfd: written to stop Run().
  // Open connections by MHD's handle; touched on the thread only.
  absl::flat_hash_map<MHD_Connection*, Connection> connections_;
  int live_ = 0;        // connections_ not `closing`; the thread only.
  std::thread thread_;  // Runs Run(); last, so it starts after the rest.
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_OPS_HTTP_SERVER_H_
