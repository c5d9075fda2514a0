// A peer's address taken once from its socket: gRPC's text, the host key
// its shares are counted under, and whether it is loopback.
#include "server/rpc/peer_address.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstring>
#include <string>

#include "gtest/gtest.h"

namespace metasrv::server {
namespace {

// A socket address of `ip` (IPv6 when it holds a colon) and `port`.
sockaddr_storage SockaddrOf(const char* ip, uint16_t port) {
  sockaddr_storage addr{};
  if (std::strchr(ip, ':') == nullptr) {
    auto& in = reinterpret_cast<sockaddr_in&>(addr);
    in.sin_family = AF_INET;
    in.sin_port = htons(port);
    EXPECT_EQ(inet_pton(AF_INET, ip, &in.sin_addr), 1);
  } else {
    auto& in6 = reinterpret_cast<sockaddr_in6&>(addr);
    in6.sin6_family = AF_INET6;
    in6.sin6_port = htons(port);
    EXPECT_EQ(inet_pton(AF_INET6, ip, &in6.sin6_addr), 1);
  }
  return addr;
}

TEST(PeerAddressTest, IPv4HostsAreTheirPrefixWithoutThePort) {
  const PeerAddress p = PeerOf(SockaddrOf("10.0.7.1", 5000), 32);
  EXPECT_EQ(p.text, "ipv4:10.0.7.1:5000");
  EXPECT_EQ(p.host, "ipv4:10.0.7.1");
  EXPECT_FALSE(p.loopback);
  EXPECT_EQ(PeerOf(SockaddrOf("10.0.7.1", 1), 24).host, "ipv4:10.0.7.0/24");
  EXPECT_EQ(PeerOf(SockaddrOf("10.0.7.1", 1), 8).host, "ipv4:10.0.0.0/8");
  EXPECT_EQ(PeerOf(SockaddrOf("10.0.7.1", 1), 0).host, "ipv4:0.0.0.0/0");
  EXPECT_EQ(PeerOf(SockaddrOf("10.0.7.1", 1), 99).host, "ipv4:10.0.7.1");
  // Every port of one address is one host.
  EXPECT_EQ(PeerOf(SockaddrOf("10.0.7.1", 2), 32).host, p.host);
}

TEST(PeerAddressTest, IPv6HostsAreTheirSlash64AndMappedIPv4IsIPv4) {
  const PeerAddress p = PeerOf(SockaddrOf("2001:db8:1:2:3:4:5:6", 5000), 32);
  EXPECT_EQ(p.text, "ipv6:[2001:db8:1:2:3:4:5:6]:5000");
  EXPECT_EQ(p.host, "ipv6:[2001:db8:1:2::]/64");
  EXPECT_FALSE(p.loopback);
  const PeerAddress mapped = PeerOf(SockaddrOf("::ffff:10.0.0.9", 7), 24);
  EXPECT_EQ(mapped.text, "ipv4:10.0.0.9:7");
  EXPECT_EQ(mapped.host, "ipv4:10.0.0.0/24");
}

TEST(PeerAddressTest, LoopbackIsAll127Slash8AndColonColon1) {
  EXPECT_TRUE(PeerOf(SockaddrOf("127.0.0.1", 1), 32).loopback);
  EXPECT_TRUE(PeerOf(SockaddrOf("127.8.9.10", 1), 32).loopback);
  EXPECT_TRUE(PeerOf(SockaddrOf("::1", 1), 32).loopback);
  EXPECT_TRUE(PeerOf(SockaddrOf("::ffff:127.0.0.2", 1), 32).loopback);
  EXPECT_FALSE(PeerOf(SockaddrOf("128.0.0.1", 1), 32).loopback);
  EXPECT_FALSE(PeerOf(SockaddrOf("::2", 1), 32).loopback);
  EXPECT_EQ(PeerOf(SockaddrOf("::1", 1), 32).host, "ipv6:[::]/64");
}

}  // namespace
}  // namespace metasrv::server
