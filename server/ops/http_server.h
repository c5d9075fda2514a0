// A small HTTP/1.1 server for operators: /metrics, /health, /ready. Built on
// GNU libmicrohttpd with one epoll thread, so idle or slow connections cost a
// socket each and never hold up a scrape (each is dropped after a timeout).
#ifndef METASRV_SERVER_OPS_HTTP_SERVER_H_
#define METASRV_SERVER_OPS_HTTP_SERVER_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

struct MHD_Daemon;

namespace metasrv::server {

// What a handler answers.
struct HttpAnswer {
  int status = 200;                                        // HTTP status code.
  std::string content_type = "text/plain; charset=utf-8";  // Its type.
  std::string body;                                        // Its body.
};

// Thread safety: handlers run on the server's thread, one at a time; they
// must be quick and thread-safe with respect to the rest of the process.
class HttpServer {
 public:
  using Handler = std::function<HttpAnswer()>;
  // GET (and HEAD) of each path; anything else is 404, other methods 405.
  using Routes = absl::flat_hash_map<std::string, Handler>;

  // Serves `routes` on `addr` (host:port; port 0 picks one). kUnavailable
  // naming the address when it cannot listen; kInvalidArgument for an
  // address that does not parse.
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(
      const std::string& addr, Routes routes,
      absl::Duration idle_timeout = absl::Seconds(10));
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const { return port_; }
  // Calls `path`'s handler (for tests and for the server itself).
  HttpAnswer Serve(const std::string& path) const;

 private:
  explicit HttpServer(Routes routes) : routes_(std::move(routes)) {}

  const Routes routes_;           // By path.
  MHD_Daemon* daemon_ = nullptr;  // libmicrohttpd's; owned.
  int port_ = 0;                  // The port bound.
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_OPS_HTTP_SERVER_H_
