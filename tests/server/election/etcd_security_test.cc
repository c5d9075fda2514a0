// The election on a secured etcd: TLS (server verification, client
// certificates) and user authentication, over the same connection as the
// lease keep-alive and Observe. Real etcd from Debian's etcd-server.
#include <unistd.h>

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/election/etcd_client.h"
#include "server/metasrv_server.h"
#include "tests/server/certs.h"
#include "tests/server/etcd_process.h"
#include "tests/server/in_process_server.h"
#include "tests/server/test_util.h"

namespace metasrv::server {
namespace {

using ::metasrv::testing::Certs;
using ::metasrv::testing::EtcdProcess;
using ::metasrv::testing::WaitFor;
using ::testing::HasSubstr;

// Options of a replica on `etcd`.
ServerOptions OnEtcd(const EtcdProcess& etcd) {
  ServerOptions options = ::metasrv::testing::LoopbackOptions();
  options.bind_addr = "127.0.0.1:0";
  options.store_addrs = {etcd.endpoint()};
  options.lease_ttl = absl::Seconds(2);
  return options;
}

// Waits until exactly one of `replicas` leads; its index, or -1.
int OneLeader(const std::vector<std::unique_ptr<MetasrvServer>>& replicas) {
  int leader = -1;
  WaitFor(
      [&] {
        int count = 0;
        for (size_t i = 0; i < replicas.size(); ++i) {
          if (replicas[i]->leadership().IsLeader()) {
            ++count;
            leader = static_cast<int>(i);
          }
        }
        return count == 1;
      },
      absl::Seconds(20));
  return leader;
}

class EtcdTlsTest : public ::testing::Test {
 protected:
  EtcdTlsTest()
      : etcd_(EtcdProcess::Options{certs_.Path("ca1.pem"),
                                   certs_.Path("server.pem"),
                                   certs_.Path("server.key"),
                                   /*client_cert_auth=*/true,
                                   certs_.Path("client1.pem"),
                                   certs_.Path("client1.key"),
                                   "",
                                   {},
                                   ""}) {}
  ServerOptions Tls() {
    ServerOptions options = OnEtcd(etcd_);
    options.store_tls_mode = "verify_full";
    options.store_tls_ca = certs_.Path("ca1.pem");
    options.store_tls_cert = certs_.Path("client1.pem");
    options.store_tls_key = certs_.Path("client1.key");
    return options;
  }
  Certs certs_;
  EtcdProcess etcd_;
};

// Two replicas elect one leader over mutual TLS; when it stops, the other
// takes over (campaign, keep-alive and Observe all work over TLS).
TEST_F(EtcdTlsTest, ElectionOverMutualTls) {
  std::vector<std::unique_ptr<MetasrvServer>> replicas;
  for (int i = 0; i < 2; ++i) {
    auto started = MetasrvServer::Start(Tls());
    ASSERT_TRUE(started.ok()) << started.status();
    replicas.push_back(*std::move(started));
  }
  const int leader = OneLeader(replicas);
  ASSERT_GE(leader, 0);
  const int other = 1 - leader;
  // The follower learned the leader through Observe.
  EXPECT_TRUE(WaitFor([&] {
    return replicas[other]->leadership().LeaderAddr() ==
           replicas[leader]->advertised_addr();
  }));
  replicas[leader].reset();
  EXPECT_TRUE(
      WaitFor([&] { return replicas[other]->leadership().IsLeader(); },
              absl::Seconds(10)));
}

TEST_F(EtcdTlsTest, AWrongCaIsRefusedAtStartNoClientCertHasNoAccess) {
  ServerOptions wrong_ca = Tls();
  wrong_ca.store_tls_ca = certs_.Path("ca2.pem");
  auto started = MetasrvServer::Start(wrong_ca);
  ASSERT_FALSE(started.ok());
  EXPECT_EQ(started.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(started.status().message(), HasSubstr("TLS with etcd failed"));

  // Without a client certificate etcd ends the connection after the TLS 1.3
  // handshake, which a client cannot tell from a network failure: no access,
  // reported at start as "not reachable yet".
  EtcdClient no_client_cert({etcd_.endpoint()}, [&] {
    EtcdSecurity tls;
    tls.tls = true;
    tls.ca_pem = certs_.Read("ca1.pem");
    return tls;
  }());
  EXPECT_FALSE(no_client_cert.CheckAccess(absl::Seconds(2)).ok());

  // A plaintext client cannot use a TLS etcd (it looks like one that is
  // down, so the server would start and wait; the client says why).
  EtcdClient plaintext({etcd_.endpoint()});
  absl::Status access = plaintext.CheckAccess(absl::Seconds(2));
  EXPECT_FALSE(access.ok());
  EtcdClient verified({etcd_.endpoint()}, [&] {
    EtcdSecurity tls;
    tls.tls = true;
    tls.ca_pem = certs_.Read("ca1.pem");
    tls.cert_pem = certs_.Read("client1.pem");
    tls.key_pem = certs_.Read("client1.key");
    return tls;
  }());
  EXPECT_TRUE(verified.CheckAccess(absl::Seconds(5)).ok());
}

class EtcdAuthTest : public ::testing::Test {
 protected:
  EtcdAuthTest()
      : etcd_(EtcdProcess::Options{
            "", "", "", false, "", "", "s3cret", {}, ""}) {}
  ~EtcdAuthTest() override { unlink(password_file_.c_str()); }
  ServerOptions WithPassword(const std::string& password) {
    std::ofstream(password_file_) << password << "\n";
    ServerOptions options = OnEtcd(etcd_);
    options.store_username = "root";
    options.store_password_file = password_file_;
    return options;
  }
  std::string password_file_ =
      "/tmp/metasrv-etcd-password-" + std::to_string(getpid());
  EtcdProcess etcd_;
};

TEST_F(EtcdAuthTest, TheRightPasswordLeadsAWrongOneIsRefusedAtStart) {
  auto wrong = MetasrvServer::Start(WithPassword("guess"));
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(wrong.status().message(), HasSubstr("etcd refused user 'root'"));

  std::vector<std::unique_ptr<MetasrvServer>> replicas;
  for (int i = 0; i < 2; ++i) {
    auto started = MetasrvServer::Start(WithPassword("s3cret"));
    ASSERT_TRUE(started.ok()) << started.status();
    replicas.push_back(*std::move(started));
  }
  const int leader = OneLeader(replicas);
  ASSERT_GE(leader, 0);
  EXPECT_TRUE(WaitFor([&] {
    return replicas[1 - leader]->leadership().LeaderAddr() ==
           replicas[leader]->advertised_addr();
  }));
  replicas[leader].reset();
  EXPECT_TRUE(WaitFor(
      [&] { return replicas[1 - leader]->leadership().IsLeader(); },
      absl::Seconds(10)));
}

// SIGHUP re-reads --store_password_file and etcd's next login uses it.
// Tokens expire two seconds after login; once the leader's has (shown by a
// probe that logged in later), a resignation makes it campaign again, which
// needs a login: with the new password, it leads again.
TEST(EtcdPasswordReloadTest, AReloadedPasswordIsUsedAtTheNextLogin) {
  EtcdProcess::Options etcd_options;
  etcd_options.root_password = "s3cret";
  etcd_options.jwt_ttl = "2s";
  EtcdProcess etcd(etcd_options);
  const std::string password_file =
      ::testing::TempDir() + "/etcd-password-" + std::to_string(getpid());
  std::ofstream(password_file) << "s3cret\n";
  ServerOptions options = OnEtcd(etcd);
  options.store_username = "root";
  options.store_password_file = password_file;
  auto started = MetasrvServer::Start(options);
  ASSERT_TRUE(started.ok()) << started.status();
  MetasrvServer& server = **started;
  ASSERT_TRUE(WaitFor([&] { return server.leadership().IsLeader(); },
                      absl::Seconds(10)));
  EtcdClient probe({etcd.endpoint()}, [] {
    EtcdSecurity security;
    security.username = "root";
    security.password = "s3cret";
    return security;
  }());
  ASSERT_TRUE(probe.CheckAccess(absl::Seconds(5)).ok());

  std::ofstream(password_file) << "n3w\n";
  server.Reload();
  ASSERT_TRUE(etcd.ChangeRootPassword("s3cret", "n3w"));
  // The probe's token expires, and the old password no longer logs in.
  ASSERT_TRUE(WaitFor(
      [&] {
        return probe.CheckAccess(absl::Seconds(2)).code() ==
               absl::StatusCode::kFailedPrecondition;
      },
      absl::Seconds(15)));
  auto admin = metasrv::v1::Admin::NewStub(
      ::metasrv::testing::Connect(server.advertised_addr()));
  grpc::ClientContext ctx;
  metasrv::v1::LeaderChangeResponse resp;
  ASSERT_TRUE(admin->LeaderChange(&ctx, {}, &resp).ok());
  // Alone, it campaigns again and leads: it logged in with the new password.
  EXPECT_TRUE(WaitFor([&] { return server.leadership().IsLeader(); },
                      absl::Seconds(15)));
  unlink(password_file.c_str());
}

// store_key_prefix: two clusters on one etcd, each with its own leader.
TEST(EtcdKeyPrefixTest, ClustersWithDifferentPrefixesLeadSeparately) {
  EtcdProcess etcd;
  std::vector<std::unique_ptr<MetasrvServer>> a, b;
  for (int i = 0; i < 2; ++i) {
    ServerOptions options = OnEtcd(etcd);
    options.election_name = "cluster-a/__metasrv_election";
    a.push_back(::metasrv::testing::StartInProcess(options));
    options.election_name = "cluster-b/__metasrv_election";
    b.push_back(::metasrv::testing::StartInProcess(options));
    ASSERT_NE(a.back(), nullptr);
    ASSERT_NE(b.back(), nullptr);
  }
  const int leader_a = OneLeader(a);
  const int leader_b = OneLeader(b);
  ASSERT_GE(leader_a, 0);
  ASSERT_GE(leader_b, 0);
  // Each follower names its own cluster's leader.
  EXPECT_TRUE(WaitFor([&] {
    return a[1 - leader_a]->leadership().LeaderAddr() ==
               a[leader_a]->advertised_addr() &&
           b[1 - leader_b]->leadership().LeaderAddr() ==
               b[leader_b]->advertised_addr();
  }));
}

// etcd's elections are prefixes ("<name>/"): a cluster named "metasrv"
// waited behind, and named the leader of, a cluster named
// "metasrv/canary" on the same etcd. Whichever starts second is refused
// (exit 2), in both orders.
TEST(EtcdKeyPrefixTest, NestedElectionNamesAreRefused) {
  EtcdProcess etcd;
  ServerOptions outer = OnEtcd(etcd);
  outer.election_name = "metasrv";
  ServerOptions inner = OnEtcd(etcd);
  inner.election_name = "metasrv/canary";
  {
    auto a = ::metasrv::testing::StartInProcess(outer);
    ASSERT_NE(a, nullptr);
    ASSERT_TRUE(WaitFor([&] { return a->leadership().IsLeader(); }));
    auto b = MetasrvServer::Start(inner);
    ASSERT_FALSE(b.ok());
    EXPECT_EQ(b.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(b.status().message(),
                HasSubstr("lies under election 'metasrv'"));
  }
  // A's lease is revoked as it stops; now the inner one starts first.
  auto b = ::metasrv::testing::StartInProcess(inner);
  ASSERT_NE(b, nullptr);
  ASSERT_TRUE(WaitFor([&] { return b->leadership().IsLeader(); }));
  auto a = MetasrvServer::Start(outer);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(a.status().message(), HasSubstr("covers another election"));
  // Names that only share a beginning are fine: "metasrv-b" is no child.
  ServerOptions sibling = OnEtcd(etcd);
  sibling.election_name = "metasrv-b";
  auto c = ::metasrv::testing::StartInProcess(sibling);
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(WaitFor([&] { return c->leadership().IsLeader(); }));
}

// Issue 38, item 6: --store_addrs at etcd's peer port (which answers KV
// and Lease calls, UNIMPLEMENTED to the Election's) looped forever on
// "UNIMPLEMENTED ... v3electionpb.Election" and "etcd is reachable again".
// Now it is refused at start, once, saying what it is.
TEST(EtcdEndpointTest, EtcdsPeerPortIsRefusedAtStartAsNotAClientEndpoint) {
  ::metasrv::testing::EtcdProcess etcd;
  ServerOptions options = ::metasrv::testing::LoopbackOptions();
  options.backend = "etcd_store";
  options.store_addrs = {etcd.peer_endpoint()};
  absl::StatusOr<std::unique_ptr<MetasrvServer>> server =
      MetasrvServer::Start(options);
  ASSERT_FALSE(server.ok());
  EXPECT_EQ(server.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(server.status().message().find("is not an etcd client endpoint"),
            std::string::npos)
      << server.status();
  EXPECT_NE(server.status().message().find("--store_addrs"), std::string::npos);
  // The client endpoint of the same etcd is accepted.
  options.store_addrs = {etcd.endpoint()};
  EXPECT_TRUE(MetasrvServer::Start(options).ok());
}

}  // namespace
}  // namespace metasrv::server
