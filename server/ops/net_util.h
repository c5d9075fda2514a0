// Small address helpers.
#ifndef METASRV_SERVER_OPS_NET_UTIL_H_
#define METASRV_SERVER_OPS_NET_UTIL_H_

#include <sys/socket.h>

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace metasrv::server {

// Splits "host:port" or "[v6]:port". kInvalidArgument if malformed.
absl::Status SplitHostPort(absl::string_view addr, std::string* host,
                           int* port);

// The address to tell clients for a server bound to `bind_addr`: itself,
// unless its host is a wildcard (0.0.0.0, ::, empty), which no client can
// dial; then the first non-loopback address of this host's interfaces (of
// the same family first), or, where the interfaces cannot be listed (no
// netlink socket, as under the shipped systemd unit), RoutedAddress(); with
// the port. Never loopback for a wildcard. kInvalidArgument if `bind_addr`
// is malformed or no such address exists (the text names --server_addr).
absl::StatusOr<std::string> AdvertisableAddress(const std::string& bind_addr);

// The source address the kernel would use to reach the rest of the network
// in `family` (AF_INET or AF_INET6), found by connecting a UDP socket
// (nothing is sent); "" if there is no route or it is loopback.
std::string RoutedAddress(int family);

// "host:port", bracketing IPv6 hosts.
std::string JoinHostPort(absl::string_view host, int port);

}  // namespace metasrv::server

#endif  // METASRV_SERVER_OPS_NET_UTIL_H_
