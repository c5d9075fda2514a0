// A client's address, taken once from its socket at accept and carried with
// its connection and its calls: the text logs show, the key its shares are
// counted under, and whether it is loopback. Nothing parses it back.
#ifndef METASRV_SERVER_RPC_PEER_ADDRESS_H_
#define METASRV_SERVER_RPC_PEER_ADDRESS_H_

#include <sys/socket.h>

#include <string>

namespace metasrv::server {

struct PeerAddress {
  // gRPC's form: "ipv4:10.0.0.1:5000", "ipv6:[2001:db8::1]:5000" (an
  // IPv4-mapped IPv6 address as IPv4).
  std::string text;
  // The host its shares are counted under: an IPv4 address's prefix of the
  // given bits ("ipv4:10.0.0.1" at 32, "ipv4:10.0.7.0/24"), an IPv6
  // address's /64 ("ipv6:[2001:db8:1:2::]/64"): one client machine or
  // network, whatever its ports and connections.
  std::string host;
  // From 127.0.0.0/8 or ::1 (admin calls need no token then, without one
  // configured).
  bool loopback = false;
};

// The address of a TCP peer `addr` (AF_INET or AF_INET6), IPv4 hosts keyed
// by their first `ipv4_prefix_bits` bits (clamped to 0..32).
PeerAddress PeerOf(const sockaddr_storage& addr, int ipv4_prefix_bits);

}  // namespace metasrv::server

#endif  // METASRV_SERVER_RPC_PEER_ADDRESS_H_
