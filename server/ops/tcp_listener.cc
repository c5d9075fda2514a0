#include "server/ops/tcp_listener.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "server/ops/net_util.h"

namespace metasrv::server {

int RaiseDescriptorLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return 1024;
  if (limit.rlim_cur < limit.rlim_max) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  // Descriptors are ints; an unlimited or huge limit is capped to them.
  constexpr rlim_t kMax = 1 << 30;
  return static_cast<int>(std::min<rlim_t>(limit.rlim_cur, kMax));
}

DescriptorCeilings DescriptorCeilings::For(int limit) {
  const int reserve = std::max(64, limit / 8);
  return {std::max(0, limit - reserve), std::max(0, limit - reserve / 2),
          std::clamp(reserve / 4, 16, 256)};
}

bool DescriptorFreeBelow(int ceiling) {
  const int probe = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (probe < 0) return false;
  close(probe);
  return probe < ceiling;
}

absl::StatusOr<std::unique_ptr<TcpListener>> TcpListener::Listen(
    const std::string& addr, absl::string_view choose_hint) {
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
        absl::StrCat("cannot resolve the address ", addr));
  }
  const int fd =
      socket(found->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  std::string error;
  if (fd < 0) {
    error = std::strerror(errno);
  } else {
    const int on = 1;
    const int off = 0;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
    // As gRPC's own listener does: the IPv6 wildcard takes IPv4 too.
    if (found->ai_family == AF_INET6) {
      setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off));
    }
    if (bind(fd, found->ai_addr, found->ai_addrlen) != 0 ||
        listen(fd, SOMAXCONN) != 0) {
      error = std::strerror(errno);
    }
  }
  freeaddrinfo(found);
  sockaddr_storage bound{};
  socklen_t bound_len = sizeof(bound);
  if (error.empty() &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &bound_len) != 0) {
    error = std::strerror(errno);
  }
  if (!error.empty()) {
    if (fd >= 0) close(fd);
    return absl::UnavailableError(absl::StrCat(
        "cannot listen on ", addr, ": ", error,
        choose_hint.empty() ? "" : " (in use, or not an address of this "
                                   "host): choose another with ",
        choose_hint));
  }
  const int bound_port =
      ntohs(bound.ss_family == AF_INET6
                ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  std::unique_ptr<TcpListener> listener(new TcpListener(fd, bound_port));
  listener->KeepSpare();
  return listener;
}

TcpListener::~TcpListener() {
  close(fd_);
  if (spare_ >= 0) close(spare_);
}

bool TcpListener::KeepSpare() {
  if (spare_ < 0) spare_ = open("/dev/null", O_RDONLY | O_CLOEXEC);
  return spare_ >= 0;
}

TcpListener::Accepted TcpListener::Accept(int ceiling) {
  KeepSpare();
  Accepted accepted;
  for (;;) {
    accepted.peer_len = sizeof(accepted.peer);
    const int fd = accept4(fd_, reinterpret_cast<sockaddr*>(&accepted.peer),
                           &accepted.peer_len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      if (fd >= ceiling) {
        close(fd);
        accepted.outcome = Outcome::kRefused;
        return accepted;
      }
      const int on = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
      accepted.outcome = Outcome::kAccepted;
      accepted.fd = fd;
      return accepted;
    }
    switch (errno) {
      case EINTR:
      case ECONNABORTED:  // Gone before it was taken: the next one.
      case EPROTO:
        continue;
      case EAGAIN:
        accepted.outcome = Outcome::kNone;
        return accepted;
      case EMFILE:
      case ENFILE:
      case ENOBUFS:
      case ENOMEM:
        break;
      default:
        // Not expected on a listening socket; treated as a pause, so that
        // the loop neither spins nor stops.
        accepted.outcome = Outcome::kWait;
        return accepted;
    }
    // Out of descriptors: the spare takes the connection off the queue.
    if (spare_ < 0) {
      accepted.outcome = Outcome::kWait;
      return accepted;
    }
    close(spare_);
    spare_ = -1;
    const int taken = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    const int taken_errno = errno;
    if (taken >= 0) close(taken);
    KeepSpare();
    if (taken >= 0) {
      accepted.outcome = Outcome::kRefused;
      return accepted;
    }
    accepted.outcome = taken_errno == EAGAIN ? Outcome::kNone : Outcome::kWait;
    return accepted;
  }
}

bool TcpListener::AcceptAll(
    int ceiling, const std::function<void(const Accepted&)>& on_accepted,
    const std::function<void()>& on_refused) {
  for (;;) {
    const Accepted accepted = Accept(ceiling);
    switch (accepted.outcome) {
      case Outcome::kAccepted:
        on_accepted(accepted);
        break;
      case Outcome::kRefused:
        on_refused();
        break;
      case Outcome::kNone:
        return true;
      case Outcome::kWait:
        return false;
    }
  }
}

}  // namespace metasrv::server
