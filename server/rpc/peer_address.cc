#include "server/rpc/peer_address.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace metasrv::server {
namespace {

// The key of IPv4 address `a` (4 bytes, network order).
std::string Ipv4Host(const unsigned char* a, int prefix_bits) {
  const int bits = std::clamp(prefix_bits, 0, 32);
  const uint32_t addr = uint32_t{a[0]} << 24 | uint32_t{a[1]} << 16 |
                        uint32_t{a[2]} << 8 | a[3];
  const uint32_t net = bits == 0 ? 0 : addr & ~uint32_t{0} << (32 - bits);
  std::string out = absl::StrCat("ipv4:", net >> 24, ".", net >> 16 & 255,
                                 ".", net >> 8 & 255, ".", net & 255);
  if (bits < 32) absl::StrAppend(&out, "/", bits);
  return out;
}

}  // namespace

PeerAddress PeerOf(const sockaddr_storage& addr, int ipv4_prefix_bits) {
  PeerAddress peer;
  char text[INET6_ADDRSTRLEN] = {};
  const unsigned char* v4 = nullptr;
  uint16_t port = 0;
  if (addr.ss_family == AF_INET) {
    const auto& in = reinterpret_cast<const sockaddr_in&>(addr);
    v4 = reinterpret_cast<const unsigned char*>(&in.sin_addr);
    port = ntohs(in.sin_port);
  } else {
    const auto& in6 = reinterpret_cast<const sockaddr_in6&>(addr);
    port = ntohs(in6.sin6_port);
    if (IN6_IS_ADDR_V4MAPPED(&in6.sin6_addr)) {
      v4 = &in6.sin6_addr.s6_addr[12];
    } else {
      inet_ntop(AF_INET6, &in6.sin6_addr, text, sizeof(text));
      peer.text = absl::StrCat("ipv6:[", text, "]:", port);
      peer.loopback = IN6_IS_ADDR_LOOPBACK(&in6.sin6_addr);
      in6_addr net = in6.sin6_addr;
      std::memset(&net.s6_addr[8], 0, 8);
      inet_ntop(AF_INET6, &net, text, sizeof(text));
      peer.host = absl::StrCat("ipv6:[", text, "]/64");
      return peer;
    }
  }
  inet_ntop(AF_INET, v4, text, sizeof(text));
  peer.text = absl::StrCat("ipv4:", text, ":", port);
  peer.host = Ipv4Host(v4, ipv4_prefix_bits);
  peer.loopback = v4[0] == 127;
  return peer;
}

}  // namespace metasrv::server
