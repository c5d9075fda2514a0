// Small address helpers.
#ifndef METASRV_SERVER_OPS_NET_UTIL_H_
#define METASRV_SERVER_OPS_NET_UTIL_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace metasrv::server {

// Splits "host:port" or "[v6]:port". kInvalidArgument if malformed.
absl::Status SplitHostPort(absl::string_view addr, std::string* host,
                           int* port);

// Asks the kernel for a free TCP port on `host` (a numeric address such as
// 127.0.0.1 or ::1) and releases it. kUnavailable if none can be had.
absl::StatusOr<int> PickFreePort(const std::string& host);

// The address to tell clients for a server bound to `bind_addr`: itself,
// unless its host is a wildcard (0.0.0.0, ::, empty), which no client can
// dial; then the first non-loopback address of this host's interfaces (of
// the same family first), with the port; a loopback address if there is
// no other. kInvalidArgument if `bind_addr` is malformed.
absl::StatusOr<std::string> AdvertisableAddress(const std::string& bind_addr);

// "host:port", bracketing IPv6 hosts.
std::string JoinHostPort(absl::string_view host, int port);

}  // namespace metasrv::server

#endif  // METASRV_SERVER_OPS_NET_UTIL_H_
