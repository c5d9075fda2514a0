// Address helpers (net_util.h). (A server bound to a wildcard is not started
// here: tests listen on loopback only.)
#include "server/ops/net_util.h"

#include <sys/socket.h>

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace metasrv::testing {
namespace {

using server::AdvertisableAddress;

TEST(AdvertisableAddressTest, ConcreteAddressesStayAsTheyAre) {
  EXPECT_EQ(*AdvertisableAddress("127.0.0.1:3002"), "127.0.0.1:3002");
  EXPECT_EQ(*AdvertisableAddress("10.1.2.3:3002"), "10.1.2.3:3002");
  EXPECT_EQ(*AdvertisableAddress("[::1]:3002"), "[::1]:3002");
  EXPECT_FALSE(AdvertisableAddress("no-port").ok());
}

TEST(AdvertisableAddressTest, WildcardsBecomeAnAddressOfThisHost) {
  for (const char* wildcard : {"0.0.0.0:3002", "[::]:3002"}) {
    absl::StatusOr<std::string> a = AdvertisableAddress(wildcard);
    ASSERT_TRUE(a.ok()) << a.status();
    EXPECT_TRUE(absl::EndsWith(*a, ":3002")) << *a;
    EXPECT_FALSE(absl::StartsWith(*a, "0.0.0.0")) << *a;
    EXPECT_FALSE(absl::StartsWith(*a, "[::]")) << *a;
    std::string host;
    int port = 0;
    ASSERT_TRUE(server::SplitHostPort(*a, &host, &port).ok()) << *a;
    EXPECT_EQ(port, 3002);
    EXPECT_FALSE(host.empty());
  }
}

TEST(AdvertisableAddressTest, TheRoutedAddressIsNeverLoopbackOrAWildcard) {
  for (int family : {AF_INET, AF_INET6}) {
    const std::string routed = server::RoutedAddress(family);
    EXPECT_FALSE(absl::StartsWith(routed, "127.")) << routed;
    EXPECT_NE(routed, "::1");
    EXPECT_NE(routed, "0.0.0.0");
    EXPECT_NE(routed, "::");
    if (!routed.empty()) {
      EXPECT_EQ(*AdvertisableAddress(server::JoinHostPort(routed, 1)),
                server::JoinHostPort(routed, 1));
    }
  }
}

}  // namespace
}  // namespace metasrv::testing
