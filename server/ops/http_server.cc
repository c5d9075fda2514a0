#include "server/ops/http_server.h"

#include <microhttpd.h>
#include <netdb.h>
#include <sys/socket.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "server/ops/net_util.h"

namespace metasrv::server {
namespace {

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

MHD_Result Dispatch(void* cls, MHD_Connection* connection, const char* url,
                    const char* method, const char*, const char*,
                    size_t* upload_size, void** state) {
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
  const auto* server = static_cast<const HttpServer*>(cls);
  return Respond(connection, server->Serve(url));
}

}  // namespace

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(
    const std::string& addr, Routes routes, absl::Duration idle_timeout) {
  std::string host;
  int port = 0;
  if (absl::Status split = SplitHostPort(addr, &host, &port); !split.ok()) {
    return split;
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = absl::StrCat(port);
  if (getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(),
                  &hints, &found) != 0 ||
      found == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot resolve the HTTP address ", addr));
  }
  std::unique_ptr<HttpServer> server(new HttpServer(std::move(routes)));
  unsigned flags = MHD_USE_EPOLL_INTERNAL_THREAD;
  if (found->ai_family == AF_INET6) flags |= MHD_USE_IPv6;
  server->daemon_ =
      MHD_start_daemon(flags, static_cast<uint16_t>(port), nullptr, nullptr,
                       &Dispatch, server.get(), MHD_OPTION_SOCK_ADDR,
                       found->ai_addr, MHD_OPTION_CONNECTION_TIMEOUT,
                       static_cast<unsigned>(std::max<int64_t>(
                           1, absl::ToInt64Seconds(idle_timeout))),
                       MHD_OPTION_CONNECTION_LIMIT, 1024u, MHD_OPTION_END);
  freeaddrinfo(found);
  if (server->daemon_ == nullptr) {
    return absl::UnavailableError(absl::StrCat(
        "cannot serve HTTP on ", addr,
        " (in use, or not an address of this host): choose another with "
        "--metrics_addr, or --metrics_addr= for none"));
  }
  const MHD_DaemonInfo* info =
      MHD_get_daemon_info(server->daemon_, MHD_DAEMON_INFO_BIND_PORT);
  server->port_ = info == nullptr ? port : info->port;
  return server;
}

HttpServer::~HttpServer() {
  if (daemon_ != nullptr) MHD_stop_daemon(daemon_);
}

HttpAnswer HttpServer::Serve(const std::string& path) const {
  auto it = routes_.find(path);
  if (it == routes_.end()) {
    return {404, "text/plain; charset=utf-8", "not found\n"};
  }
  return it->second();
}

}  // namespace metasrv::server
