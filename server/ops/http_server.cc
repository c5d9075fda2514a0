#include "server/ops/http_server.h"

#include <microhttpd.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "server/ops/threads.h"

namespace metasrv::server {
namespace {

// Connections taken per turn of the loop, so that closed ones are reaped
// between batches and a flood cannot evict every connection at once.
constexpr int kAcceptsPerTurn = 64;

MHD_Result Respond(MHD_Connection* connection, const HttpAnswer& answer) {
  MHD_Response* response = MHD_create_response_from_buffer(
      answer.body.size(), const_cast<char*>(answer.body.data()),
      MHD_RESPMEM_MUST_COPY);
  if (response == nullptr) return MHD_NO;
  MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE,
                          answer.content_type.c_str());
  const MHD_Result queued = MHD_queue_response(
      connection, static_cast<unsigned>(answer.status), response);
  MHD_destroy_response(response);
  return queued;
}

}  // namespace

// libmicrohttpd's callbacks; all run on the server's thread, inside MHD_run
// or MHD_add_connection.
class HttpServer::Callbacks {
 public:
  static MHD_Result Dispatch(void* cls, MHD_Connection* connection,
                             const char* url, const char* method, const char*,
                             const char*, size_t* upload_size, void** state) {
    // libmicrohttpd calls once with the headers, then with any body.
    if (*state == nullptr) {
      *state = connection;
      return MHD_YES;
    }
    if (*upload_size != 0) {
      *upload_size = 0;  // Bodies are ignored.
      return MHD_YES;
    }
    if (std::strcmp(method, "GET") != 0 && std::strcmp(method, "HEAD") != 0) {
      return Respond(connection,
                     {405, "text/plain; charset=utf-8", "GET only\n"});
    }
    return Respond(connection, static_cast<HttpServer*>(cls)->Serve(url));
  }

  static void Notify(void* cls, MHD_Connection* connection, void**,
                     MHD_ConnectionNotificationCode code) {
    auto* server = static_cast<HttpServer*>(cls);
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
      const MHD_ConnectionInfo* info = MHD_get_connection_info(
          connection, MHD_CONNECTION_INFO_CONNECTION_FD);
      server->connections_[connection] =
          Connection{info == nullptr ? -1 : info->connect_fd, absl::Now()};
      ++server->live_;
      return;
    }
    auto it = server->connections_.find(connection);
    if (it == server->connections_.end()) return;
    if (!it->second.closing) --server->live_;
    server->connections_.erase(it);
  }

  static void Completed(void* cls, MHD_Connection* connection, void**,
                        MHD_RequestTerminationCode) {
    auto* server = static_cast<HttpServer*>(cls);
    auto it = server->connections_.find(connection);
    if (it != server->connections_.end()) it->second.since = absl::Now();
  }
};

HttpServer::HttpServer(std::unique_ptr<TcpListener> listener, Routes routes,
                       Options options)
    : routes_(std::move(routes)),
      options_(std::move(options)),
      listener_(std::move(listener)) {}

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(
    const std::string& addr, Routes routes, Options options) {
  absl::StatusOr<std::unique_ptr<TcpListener>> listener = TcpListener::Listen(
      addr, "--metrics_addr, or --metrics_addr= for none");
  if (!listener.ok()) return listener.status();
  if (options.descriptor_ceiling <= 0) {
    options.descriptor_ceiling =
        DescriptorCeilings::For(RaiseDescriptorLimit()).http;
  }
  options.max_connections = std::max(1, options.max_connections);
  std::unique_ptr<HttpServer> server(new HttpServer(
      *std::move(listener), std::move(routes), std::move(options)));
  const HttpServer::Options& o = server->options_;
  // MHD's own limit leaves room for the connections being closed.
  const unsigned mhd_limit =
      static_cast<unsigned>(2 * o.max_connections + kAcceptsPerTurn);
  server->daemon_ = MHD_start_daemon(
      MHD_USE_EPOLL | MHD_USE_NO_LISTEN_SOCKET | MHD_USE_IPv6, 0, nullptr,
      nullptr, &Callbacks::Dispatch, server.get(), MHD_OPTION_NOTIFY_CONNECTION,
      &Callbacks::Notify, server.get(), MHD_OPTION_NOTIFY_COMPLETED,
      &Callbacks::Completed, server.get(),
      // Only a backstop (its clock counts whole seconds): the deadline is
      // ours, kept by CloseLate().
      MHD_OPTION_CONNECTION_TIMEOUT,
      static_cast<unsigned>(absl::ToInt64Seconds(o.request_deadline) + 2),
      MHD_OPTION_CONNECTION_LIMIT, mhd_limit, MHD_OPTION_END);
  server->stop_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (server->daemon_ == nullptr || server->stop_fd_ < 0) {
    return absl::InternalError(
        absl::StrCat("cannot start the HTTP server on ", addr));
  }
  server->thread_ =
      StartThread(ThreadRole::kHttp, [s = server.get()] { s->Run(); });
  return server;
}

HttpServer::~HttpServer() {
  if (thread_.joinable()) {
    const uint64_t one = 1;
    (void)!write(stop_fd_, &one, sizeof(one));
    thread_.join();
  }
  if (daemon_ != nullptr) MHD_stop_daemon(daemon_);
  if (stop_fd_ >= 0) close(stop_fd_);
}

HttpAnswer HttpServer::Serve(const std::string& path) const {
  auto it = routes_.find(path);
  if (it == routes_.end()) {
    return {404, "text/plain; charset=utf-8", "not found\n"};
  }
  return it->second();
}

void HttpServer::Run() {
  const MHD_DaemonInfo* info =
      MHD_get_daemon_info(daemon_, MHD_DAEMON_INFO_EPOLL_FD);
  const int mhd_fd = info == nullptr ? -1 : info->epoll_fd;
  Backlog backlog = Backlog::kDrained;
  for (;;) {
    int timeout_ms = 100;  // Deadlines are checked this often.
    if (backlog == Backlog::kMore) {
      timeout_ms = 0;
    } else if (connections_.empty() && backlog == Backlog::kDrained) {
      timeout_ms = -1;  // Nothing to time: wait for a connection.
    }
    MHD_UNSIGNED_LONG_LONG mhd_ms = 0;
    if (timeout_ms != 0 && MHD_get_timeout(daemon_, &mhd_ms) == MHD_YES) {
      const int mhd = static_cast<int>(std::min<uint64_t>(mhd_ms, 1000));
      timeout_ms = timeout_ms < 0 ? mhd : std::min(timeout_ms, mhd);
    }
    const bool paused = backlog == Backlog::kPaused;
    pollfd fds[3] = {
        {stop_fd_, POLLIN, 0},
        {listener_->fd(), static_cast<short>(paused ? 0 : POLLIN), 0},
        {mhd_fd, POLLIN, 0}};
    poll(fds, 3, timeout_ms);
    if (fds[0].revents != 0) return;
    if (backlog != Backlog::kDrained || fds[1].revents != 0) {
      backlog = AcceptWaiting();
    }
    MHD_run(daemon_);
    CloseLate(absl::Now());
  }
}

HttpServer::Backlog HttpServer::AcceptWaiting() {
  for (int taken = 0; taken < kAcceptsPerTurn; ++taken) {
    TcpListener::Accepted accepted =
        listener_->Accept(options_.descriptor_ceiling);
    switch (accepted.outcome) {
      case TcpListener::Outcome::kNone:
        return Backlog::kDrained;
      case TcpListener::Outcome::kWait:
        return Backlog::kPaused;
      case TcpListener::Outcome::kRefused:
        Report(HttpDrop::kRefused);
        continue;
      case TcpListener::Outcome::kAccepted:
        break;
    }
    if (Live() >= options_.max_connections && !MakeRoom()) {
      close(accepted.fd);
      Report(HttpDrop::kRefused);
      continue;
    }
    // MHD owns the socket from here, and closes it if it cannot take it.
    MHD_add_connection(daemon_, accepted.fd,
                       reinterpret_cast<const sockaddr*>(&accepted.peer),
                       accepted.peer_len);
  }
  return Backlog::kMore;
}

bool HttpServer::MakeRoom() {
  Connection* oldest = nullptr;
  for (auto& [handle, connection] : connections_) {
    if (connection.closing) continue;
    if (oldest == nullptr || connection.since < oldest->since) {
      oldest = &connection;
    }
  }
  if (oldest == nullptr) return false;
  Close(oldest, HttpDrop::kEvicted);
  return true;
}

void HttpServer::CloseLate(absl::Time now) {
  for (auto& [handle, connection] : connections_) {
    if (!connection.closing &&
        now - connection.since >= options_.request_deadline) {
      Close(&connection, HttpDrop::kLate);
    }
  }
}

void HttpServer::Close(Connection* connection, HttpDrop why) {
  // MHD sees the end of the stream and closes the socket itself; closing it
  // here would free its number while MHD still uses it.
  Report(why);  // First, so that it is counted before the peer sees EOF.
  if (connection->fd >= 0) shutdown(connection->fd, SHUT_RDWR);
  connection->closing = true;
  --live_;
}

void HttpServer::Report(HttpDrop why) const {
  if (options_.on_drop) options_.on_drop(why);
}

}  // namespace metasrv::server
