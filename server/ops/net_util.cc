#include "server/ops/net_util.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace metasrv::server {

absl::Status SplitHostPort(absl::string_view addr, std::string* host,
                           int* port) {
  const size_t colon = addr.rfind(':');
  if (colon == absl::string_view::npos || colon == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("address '", addr, "' is not host:port"));
  }
  absl::string_view h = addr.substr(0, colon);
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') {
    h = h.substr(1, h.size() - 2);
  }
  int p = -1;
  if (!absl::SimpleAtoi(addr.substr(colon + 1), &p) || p < 0 || p > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("address '", addr, "' has no valid port"));
  }
  // A numeric host must be a real address: 999.1.1.1 is no host name.
  const bool dotted = !h.empty() && h.find_first_not_of("0123456789.") ==
                                        absl::string_view::npos;
  const bool v6 = h.find(':') != absl::string_view::npos;
  if (dotted || v6) {
    unsigned char buf[sizeof(in6_addr)];
    const std::string numeric(h);
    if (inet_pton(v6 ? AF_INET6 : AF_INET, numeric.c_str(), buf) != 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "address '", addr, "' has no valid ", v6 ? "IPv6" : "IPv4", " host"));
    }
  }
  *host = std::string(h);
  *port = p;
  return absl::OkStatus();
}

std::string JoinHostPort(absl::string_view host, int port) {
  if (host.find(':') != absl::string_view::npos) {
    return absl::StrCat("[", host, "]:", port);
  }
  return absl::StrCat(host, ":", port);
}

namespace {

bool IsLoopback(const std::string& host) {
  return absl::StartsWith(host, "127.") || host == "::1";
}

// The non-loopback addresses of this host's interfaces that are up, as
// getifaddrs lists them: IPv4 first, then IPv6 (link-local left out, it
// needs a zone). Empty if getifaddrs fails, as it does where netlink
// sockets are forbidden (systemd's RestrictAddressFamilies).
void InterfaceAddresses(std::vector<std::string>* v4,
                        std::vector<std::string>* v6) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return;
  for (ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || (i->ifa_flags & IFF_UP) == 0 ||
        (i->ifa_flags & IFF_LOOPBACK) != 0) {
      continue;
    }
    char text[INET6_ADDRSTRLEN] = {};
    const int family = i->ifa_addr->sa_family;
    if (family == AF_INET) {
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr,
                text, sizeof(text));
      v4->push_back(text);
    } else if (family == AF_INET6) {
      const auto* a6 = reinterpret_cast<sockaddr_in6*>(i->ifa_addr);
      if (IN6_IS_ADDR_LINKLOCAL(&a6->sin6_addr)) continue;
      inet_ntop(AF_INET6, &a6->sin6_addr, text, sizeof(text));
      v6->push_back(text);
    }
  }
  freeifaddrs(list);
}

}  // namespace

std::string RoutedAddress(int family) {
  // Connecting a UDP socket sends nothing: the kernel only picks the route
  // and the source address it would use. The targets are documentation
  // addresses (RFC 5737, RFC 3849), never dialled.
  const int fd = socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return "";
  sockaddr_storage target{};
  socklen_t len = 0;
  if (family == AF_INET) {
    auto* v4 = reinterpret_cast<sockaddr_in*>(&target);
    v4->sin_family = AF_INET;
    v4->sin_port = htons(9);
    inet_pton(AF_INET, "192.0.2.1", &v4->sin_addr);
    len = sizeof(sockaddr_in);
  } else {
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&target);
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(9);
    inet_pton(AF_INET6, "2001:db8::1", &v6->sin6_addr);
    len = sizeof(sockaddr_in6);
  }
  std::string found;
  sockaddr_storage local{};
  socklen_t local_len = sizeof(local);
  if (connect(fd, reinterpret_cast<sockaddr*>(&target), len) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_len) == 0) {
    char text[INET6_ADDRSTRLEN] = {};
    const void* addr =
        family == AF_INET
            ? static_cast<const void*>(
                  &reinterpret_cast<sockaddr_in*>(&local)->sin_addr)
            : static_cast<const void*>(
                  &reinterpret_cast<sockaddr_in6*>(&local)->sin6_addr);
    if (inet_ntop(family, addr, text, sizeof(text)) != nullptr) found = text;
  }
  close(fd);
  if (IsLoopback(found) || found == "0.0.0.0" || found == "::") return "";
  return found;
}

absl::StatusOr<std::string> AdvertisableAddress(const std::string& bind_addr) {
  std::string host;
  int port = 0;
  if (absl::Status s = SplitHostPort(bind_addr, &host, &port); !s.ok()) {
    return s;
  }
  const bool v4_any = host == "0.0.0.0" || host.empty();
  const bool v6_any = host == "::";
  if (!v4_any && !v6_any) return bind_addr;
  // The interfaces first, of the bound family first; then the address the
  // kernel routes from, which needs no netlink socket.
  std::vector<std::string> v4, v6;
  InterfaceAddresses(&v4, &v6);
  const std::vector<std::string>& same = v4_any ? v4 : v6;
  const std::vector<std::string>& other = v4_any ? v6 : v4;
  std::string chosen = !same.empty()    ? same.front()
                       : !other.empty() ? other.front()
                                        : "";
  if (chosen.empty()) chosen = RoutedAddress(v4_any ? AF_INET : AF_INET6);
  if (chosen.empty()) chosen = RoutedAddress(v4_any ? AF_INET6 : AF_INET);
  if (chosen.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bound to the wildcard address ", bind_addr,
        " and no address of this host but loopback was found to tell "
        "clients (no interface list, no route): set --server_addr "
        "(server_addr in [grpc]) to the address clients dial"));
  }
  return JoinHostPort(chosen, port);
}

}  // namespace metasrv::server
