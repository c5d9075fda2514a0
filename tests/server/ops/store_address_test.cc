// The store addresses read by both the configuration's check and the stores.
#include "server/ops/store_address.h"

#include "gtest/gtest.h"

namespace metasrv::server {
namespace {

TEST(MysqlAddressTest, ParsesGreptimeDbsUrlForm) {
  absl::StatusOr<MysqlAddress> a =
      ParseMysqlAddress("mysql://root:p%40ss@10.0.0.5:3307/meta?ssl-mode=x");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->user, "root");
  EXPECT_EQ(a->password, "p@ss");
  EXPECT_EQ(a->host, "10.0.0.5");
  EXPECT_EQ(a->port, 3307u);
  EXPECT_EQ(a->database, "meta");
  a = ParseMysqlAddress("mysql://u@[::1]/db");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->host, "::1");
  EXPECT_EQ(a->port, 3306u);
  EXPECT_EQ(a->password, "");
  for (const char* bad :
       {"10.0.0.5:3306", "mysql://host:0/db", "mysql://host:99999/db",
        "mysql://host:3306", "mysql:///db", "mysql://host:x/db"}) {
    EXPECT_EQ(ParseMysqlAddress(bad).status().code(),
              absl::StatusCode::kInvalidArgument)
        << bad;
  }
}

}  // namespace
}  // namespace metasrv::server
