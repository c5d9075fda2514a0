// The lease stores against real PostgreSQL and MariaDB servers: what
// LeaseElection relies on, call by call; and refusals at start.
#include "server/election/lease_store.h"

#include <unistd.h>

#include <fstream>
#include <memory>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "server/election/sql_lease_store.h"
#include "server/metasrv_server.h"
#include "tests/server/certs.h"
#include "tests/server/in_process_server.h"
#include "tests/server/sql_process.h"
#include "tests/server/test_util.h"

namespace metasrv::server {
namespace {

using ::metasrv::testing::SqlProcess;
using ::metasrv::testing::WaitFor;

constexpr absl::Duration kTimeout = absl::Seconds(5);

class LeaseStoreTest : public ::testing::TestWithParam<std::string> {
 protected:
  static std::map<std::string, std::unique_ptr<SqlProcess>>& Servers() {
    static auto* servers =
        new std::map<std::string, std::unique_ptr<SqlProcess>>();
    return *servers;
  }
  static void TearDownTestSuite() { Servers().clear(); }

  void SetUp() override {
    std::unique_ptr<SqlProcess>& server = Servers()[GetParam()];
    if (server == nullptr) {
      if (GetParam() == "postgres_store") {
        server = std::make_unique<::metasrv::testing::PostgresProcess>();
      } else {
        server = std::make_unique<::metasrv::testing::MariadbProcess>();
      }
    }
    server_ = server.get();
    static int test_number = 0;
    prefix_ = absl::StrCat("t", ++test_number, "_%/");
  }

  std::unique_ptr<LeaseStore> NewStore(const std::string& address) {
    LeaseStoreOptions options;
    options.address = address;
    return GetParam() == "postgres_store" ? MakePostgresLeaseStore(options)
                                          : MakeMysqlLeaseStore(options);
  }
  std::unique_ptr<LeaseStore> NewStore() {
    return NewStore(server_->address());
  }

  // A replica's options: its address has a wrong password, its
  // --store_password_file (a new temporary file, named in `*path`) the
  // right one.
  ServerOptions WithPasswordFile(std::string* path) {
    char name[] = "/tmp/metasrv-sql-password-XXXXXX";
    const int fd = mkstemp(name);
    EXPECT_GE(fd, 0);
    if (fd >= 0) close(fd);
    *path = name;
    std::ofstream(*path) << ::metasrv::testing::kSqlPassword << "\n";
    ServerOptions options = ::metasrv::testing::LoopbackOptions();
    options.backend = GetParam();
    options.store_addrs = {server_->AddressWithPassword("wrong")};
    options.store_password_file = *path;
    options.lease_ttl = absl::Seconds(2);
    return options;
  }

  SqlProcess* server_ = nullptr;  // The suite's server for the backend.
  std::string prefix_;            // This test's keys; has a LIKE wildcard.
};

TEST_P(LeaseStoreTest, OneHolderAtATimeUntilItsRowExpires) {
  auto a = NewStore();
  auto b = NewStore();
  const std::string key = prefix_ + "leader";
  const absl::Duration ttl = absl::Seconds(1);
  ASSERT_TRUE(a->Open(kTimeout).ok());
  absl::StatusOr<bool> took = a->Acquire(key, "A", "a:1", ttl, kTimeout);
  ASSERT_TRUE(took.ok()) << took.status();
  EXPECT_TRUE(*took);
  // B is refused while A's row lives; A renews.
  absl::StatusOr<bool> refused = b->Acquire(key, "B", "b:1", ttl, kTimeout);
  ASSERT_TRUE(refused.ok()) << refused.status();
  EXPECT_FALSE(*refused);
  EXPECT_TRUE(*a->Acquire(key, "A", "a:1", ttl, kTimeout));
  auto rows = b->Scan(prefix_, kTimeout);
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0].key, key);
  EXPECT_EQ((*rows)[0].value, "a:1");
  // Once A stops renewing, B takes the row after it expires (on the
  // database's clock), and A's next renewal fails.
  ASSERT_TRUE(WaitFor(
      [&] {
        return b->Acquire(key, "B", "b:1", ttl, kTimeout).value_or(false);
      },
      absl::Seconds(5)));
  EXPECT_FALSE(*a->Acquire(key, "A", "a:1", ttl, kTimeout));
  rows = a->Scan(prefix_, kTimeout);
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0].value, "b:1");
  // Release only by the holder; then anyone takes it at once.
  ASSERT_TRUE(a->Release(key, "A", kTimeout).ok());
  EXPECT_FALSE(*a->Acquire(key, "A", "a:1", ttl, kTimeout));
  ASSERT_TRUE(b->Release(key, "B", kTimeout).ok());
  EXPECT_TRUE(*a->Acquire(key, "A", "a:1", ttl, kTimeout));
}

TEST_P(LeaseStoreTest, ScanSeesOnlyLiveRowsUnderItsPrefixWildcardsLiteral) {
  auto store = NewStore();
  ASSERT_TRUE(
      store->Put(prefix_ + "c/1", "h1", "x:1", absl::Seconds(30), kTimeout)
          .ok());
  ASSERT_TRUE(
      store->Put(prefix_ + "c/2", "h2", "x:2", absl::Milliseconds(1), kTimeout)
          .ok());
  // Same text but for the wildcard character: LIKE must not match it.
  std::string other = prefix_;
  other[other.find('%')] = 'X';
  ASSERT_TRUE(
      store->Put(other + "c/3", "h3", "x:3", absl::Seconds(30), kTimeout).ok());
  ASSERT_TRUE(WaitFor([&] {
    auto rows = store->Scan(prefix_ + "c/", kTimeout);
    return rows.ok() && rows->size() == 1;
  }));
  auto rows = store->Scan(prefix_ + "c/", kTimeout);
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ((*rows)[0].key, prefix_ + "c/1");
  EXPECT_EQ((*rows)[0].value, "x:1");
  // How long it still lives, on the database's clock.
  EXPECT_GT((*rows)[0].remaining, absl::Seconds(20));
  EXPECT_LE((*rows)[0].remaining, absl::Seconds(30));
}

TEST_P(LeaseStoreTest, WrongPasswordIsAPermanentError) {
  auto store = NewStore(server_->AddressWithPassword("wrong"));
  const absl::Status open = store->Open(kTimeout);
  EXPECT_EQ(open.code(), absl::StatusCode::kFailedPrecondition) << open;
}

TEST_P(LeaseStoreTest, ServerDownIsUnavailableAndBounded) {
  // A port nobody listens on.
  const std::string address =
      GetParam() == "postgres_store"
          ? absl::StrCat("postgresql://metasrv:x@127.0.0.1:",
                         ::metasrv::testing::FreePort(), "/postgres")
          : absl::StrCat("mysql://metasrv:x@127.0.0.1:",
                         ::metasrv::testing::FreePort(), "/metasrv");
  auto store = NewStore(address);
  const absl::Status open = store->Open(kTimeout);
  EXPECT_EQ(open.code(), absl::StatusCode::kUnavailable) << open;
}

TEST_P(LeaseStoreTest, PausedServerTimesOutWithinTheCallsTimeout) {
  auto store = NewStore();
  ASSERT_TRUE(store->Open(kTimeout).ok());
  server_->Pause();
  const absl::Time start = absl::Now();
  absl::StatusOr<bool> held =
      store->Acquire(prefix_ + "leader", "A", "a:1", absl::Seconds(1),
                     absl::Milliseconds(300));
  const absl::Duration took = absl::Now() - start;
  server_->Resume();
  EXPECT_EQ(held.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_LT(took, absl::Seconds(2));
  // The next call reconnects.
  ASSERT_TRUE(WaitFor([&] {
    return store
        ->Acquire(prefix_ + "leader", "A", "a:1", absl::Seconds(1), kTimeout)
        .ok();
  }));
}

TEST_P(LeaseStoreTest, MetasrvRefusesToStartWithAWrongPassword) {
  ServerOptions options = ::metasrv::testing::LoopbackOptions();
  options.bind_addr = "127.0.0.1:0";
  options.backend = GetParam();
  options.store_addrs = {server_->AddressWithPassword("wrong")};
  absl::StatusOr<std::unique_ptr<MetasrvServer>> started =
      MetasrvServer::Start(options);
  ASSERT_FALSE(started.ok());
  EXPECT_EQ(started.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(absl::StrContains(started.status().message(), "password") ||
              absl::StrContains(started.status().message(), "denied"))
      << started.status();
}

// --store_password_file works for the SQL stores too: its password wins
// over the one in the address, and the replica leads.
TEST_P(LeaseStoreTest, APasswordFileWinsOverTheAddresssPassword) {
  std::string path;
  absl::StatusOr<std::unique_ptr<MetasrvServer>> started =
      MetasrvServer::Start(WithPasswordFile(&path));
  unlink(path.c_str());
  ASSERT_TRUE(started.ok()) << started.status();
  EXPECT_TRUE(
      WaitFor([&] { return (*started)->leadership().IsLeader(); }));
}

// SIGHUP re-reads --store_password_file; the next connection uses it (the
// one open stays). A wrong one, once the database restarts, loses the lease;
// the right one, re-read, wins it back.
TEST_P(LeaseStoreTest, AReloadedPasswordIsUsedAtTheNextConnection) {
  std::string path;
  absl::StatusOr<std::unique_ptr<MetasrvServer>> started =
      MetasrvServer::Start(WithPasswordFile(&path));
  ASSERT_TRUE(started.ok()) << started.status();
  MetasrvServer& metasrv = **started;
  ASSERT_TRUE(
      WaitFor([&] { return metasrv.leadership().IsLeader(); }));

  std::ofstream(path) << "wrong\n";
  metasrv.Reload();
  server_->Stop();
  server_->Start();
  EXPECT_TRUE(WaitFor([&] { return !metasrv.leadership().IsLeader(); },
                      absl::Seconds(10)));
  std::ofstream(path) << ::metasrv::testing::kSqlPassword << "\n";
  metasrv.Reload();
  EXPECT_TRUE(WaitFor([&] { return metasrv.leadership().IsLeader(); },
                      absl::Seconds(15)));
  unlink(path.c_str());
}

INSTANTIATE_TEST_SUITE_P(Stores, LeaseStoreTest,
                         ::testing::Values("postgres_store", "mysql_store"),
                         [](const auto& info) { return info.param; });

// TLS with the server's certificate verified, name included: the right CA
// connects; another CA is refused as an error that will not heal.
TEST_P(LeaseStoreTest, TlsVerifiesTheServerAgainstTheGivenCa) {
  ::metasrv::testing::Certs certs;
  const ::metasrv::testing::ServerTls tls{certs.Path("server.pem"),
                                          certs.Path("server.key")};
  std::unique_ptr<SqlProcess> server;
  if (GetParam() == "postgres_store") {
    server = std::make_unique<::metasrv::testing::PostgresProcess>(&tls);
  } else {
    server = std::make_unique<::metasrv::testing::MariadbProcess>(&tls);
  }
  auto open = [&](const std::string& mode, const std::string& ca) {
    LeaseStoreOptions options;
    options.address = server->address();
    options.tls_mode = mode;
    options.ca_path = ca.empty() ? "" : certs.Path(ca);
    std::unique_ptr<LeaseStore> store = GetParam() == "postgres_store"
                                            ? MakePostgresLeaseStore(options)
                                            : MakeMysqlLeaseStore(options);
    return store->Open(kTimeout);
  };
  EXPECT_TRUE(open("verify_full", "ca1.pem").ok())
      << open("verify_full", "ca1.pem");
  EXPECT_TRUE(open("verify_ca", "ca1.pem").ok())
      << open("verify_ca", "ca1.pem");
  const absl::Status wrong = open("verify_full", "ca2.pem");
  EXPECT_EQ(wrong.code(), absl::StatusCode::kFailedPrecondition) << wrong;
  // Without TLS asked for, the address decides (plaintext works).
  EXPECT_TRUE(open("", "").ok()) << open("", "");
}

}  // namespace
}  // namespace metasrv::server
