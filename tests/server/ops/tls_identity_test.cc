// The server's TLS identity: the pair checked at start, rotations served
// when they match and refused (the last good pair serving on) when not.
#include "server/ops/tls_identity.h"

#include <stdio.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "metasrv/v1/metasrv.grpc.pb.h"
#include "server/config/checked_options.h"
#include "server/metasrv_server.h"
#include "tests/server/certs.h"
#include "tests/server/in_process_server.h"
#include "tests/server/test_util.h"

namespace metasrv::server {
namespace {

using ::metasrv::testing::CapturedLog;
using ::metasrv::testing::Certs;
using ::metasrv::testing::FlowReport;
using ::metasrv::testing::HeartbeatClient;
using ::metasrv::testing::Request;
using ::metasrv::testing::ScrapeMetrics;
using ::metasrv::testing::StartInProcess;
using ::metasrv::testing::WaitFor;
namespace meta = greptime::v1::meta;

TEST(CheckTlsIdentityTest, AMatchingPairPassesAnotherPairsKeyDoesNot) {
  Certs certs;
  const TlsPaths paths{"c.pem", "k.key", ""};
  EXPECT_TRUE(
      CheckTlsIdentity({certs.Read("server.pem"), certs.Read("server.key"), ""},
                       paths)
          .ok());
  absl::Status mismatched = CheckTlsIdentity(
      {certs.Read("server.pem"), certs.Read("client1.key"), ""}, paths);
  EXPECT_EQ(mismatched.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(mismatched.message().find("do not belong together"),
            std::string::npos)
      << mismatched;
  EXPECT_NE(mismatched.message().find("k.key"), std::string::npos);
  EXPECT_NE(mismatched.message().find("c.pem"), std::string::npos);
  // Not PEM at all: named by flag.
  absl::Status no_cert = CheckTlsIdentity(
      {"not a certificate", certs.Read("server.key"), ""}, paths);
  EXPECT_NE(no_cert.message().find("--tls_cert"), std::string::npos);
  absl::Status no_key = CheckTlsIdentity(
      {certs.Read("server.pem"), certs.Read("server.pem"), ""}, paths);
  EXPECT_NE(no_key.message().find("--tls_key"), std::string::npos);
  absl::Status no_ca = CheckTlsIdentity(
      {certs.Read("server.pem"), certs.Read("server.key"), "junk"},
      {"c.pem", "k.key", "ca.pem"});
  EXPECT_NE(no_ca.message().find("--tls_client_ca"), std::string::npos);
}

// Issue 38, item 3: a certificate with another pair's key is refused by
// the check (and so by --check_config and at start, exit 2), instead of a
// server that logs "serving with TLS" and fails every handshake.
TEST(CheckTlsIdentityTest, AMismatchedPairIsRefusedAtCheckAndStart) {
  Certs certs;
  ServerOptions options = ::metasrv::testing::LoopbackOptions();
  options.tls_cert = certs.Path("server.pem");
  options.tls_key = certs.Path("client1.key");
  absl::StatusOr<CheckedOptions> checked = CheckOptions(options);
  EXPECT_EQ(checked.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MetasrvServer::Start(options).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// Whether GetFlowState succeeds with `creds`.
bool Reachable(const std::string& addr,
               std::shared_ptr<grpc::ChannelCredentials> creds) {
  auto channel = grpc::CreateChannel(addr, creds);
  auto stub = metasrv::v1::FlowState::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  metasrv::v1::GetFlowStateResponse resp;
  return stub->GetFlowState(&ctx, {}, &resp).ok();
}

std::shared_ptr<grpc::ChannelCredentials> Tls(const Certs& certs,
                                              const std::string& client = "") {
  grpc::SslCredentialsOptions o;
  o.pem_root_certs = certs.Read("ca1.pem");
  if (!client.empty()) {
    o.pem_private_key = certs.Read(client + ".key");
    o.pem_cert_chain = certs.Read(client + ".pem");
  }
  return grpc::SslCredentials(o);
}

// The certificate the server at `addr` presents to a new connection (PEM);
// empty if the call fails.
std::string PresentedCertificate(const std::string& addr, const Certs& certs) {
  grpc::ChannelArguments args;
  args.SetInt("metasrv.test.unique", rand());  // A connection of its own.
  auto channel = grpc::CreateCustomChannel(addr, Tls(certs), args);
  auto stub = metasrv::v1::FlowState::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  metasrv::v1::GetFlowStateResponse resp;
  if (!stub->GetFlowState(&ctx, {}, &resp).ok()) return "";
  std::vector<grpc::string_ref> pem =
      ctx.auth_context()->FindPropertyValues("x509_pem_cert");
  return pem.empty() ? "" : std::string(pem[0].data(), pem[0].size());
}

// The server's certificate files in a folder of their own, first holding
// ca1's "server" pair, and a "renewed" pair issued beside it.
struct RotatableFiles {
  RotatableFiles() {
    certs.IssueServer("renewed");
    char made[] = "/tmp/metasrv-tls-XXXXXX";
    EXPECT_NE(mkdtemp(made), nullptr);
    dir = made;
    cert = dir + "/tls.pem";
    key = dir + "/tls.key";
    std::ofstream(cert) << certs.Read("server.pem");
    std::ofstream(key) << certs.Read("server.key");
  }
  ~RotatableFiles() { std::filesystem::remove_all(dir); }
  // Loopback options serving these files.
  ServerOptions Options() const {
    ServerOptions options = ::metasrv::testing::LoopbackOptions();
    options.tls_cert = cert;
    options.tls_key = key;
    return options;
  }

  Certs certs;
  std::string dir, cert, key;
};

// A certificate renewed in place (cert-manager, certbot): new connections
// get it within the refresh interval, with no restart; an open stream
// stays open.
TEST(TlsTest, ARenewedCertificateServesNewConnectionsAndOpenOnesStay) {
  RotatableFiles files;
  Certs& certs = files.certs;
  const std::string& cert = files.cert;
  const std::string& key = files.key;
  ServerOptions options = files.Options();
  auto server = StartInProcess(options);
  ASSERT_NE(server, nullptr);
  const std::string addr = server->advertised_addr();
  ASSERT_EQ(PresentedCertificate(addr, certs), certs.Read("server.pem"));
  HeartbeatClient open(grpc::CreateChannel(addr, Tls(certs)));
  ASSERT_TRUE(open.Call(Request(meta::FLOWNODE, 1)).has_value());
  // Renewed: each file replaced whole (written aside, then renamed).
  std::ofstream(key + ".new") << certs.Read("renewed.key");
  std::ofstream(cert + ".new") << certs.Read("renewed.pem");
  ASSERT_EQ(rename((key + ".new").c_str(), key.c_str()), 0);
  ASSERT_EQ(rename((cert + ".new").c_str(), cert.c_str()), 0);
  EXPECT_TRUE(WaitFor(
      [&] {
        return PresentedCertificate(addr, certs) == certs.Read("renewed.pem");
      },
      absl::Seconds(15)));
  // The stream opened before is still open and answered.
  EXPECT_TRUE(open.Call(FlowReport(1, {{1, 10, 1}})).has_value());
  EXPECT_TRUE(open.Close().ok());
}

TEST(TlsTest, TlsClientConnectsPlaintextClientIsRefused) {
  Certs certs;
  ServerOptions options = ::metasrv::testing::LoopbackOptions();
  options.tls_cert = certs.Path("server.pem");
  options.tls_key = certs.Path("server.key");
  auto server = StartInProcess(options);
  ASSERT_NE(server, nullptr);
  EXPECT_TRUE(Reachable(server->advertised_addr(), Tls(certs)));
  EXPECT_FALSE(
      Reachable(server->advertised_addr(), grpc::InsecureChannelCredentials()));
}

TEST(TlsTest, MutualTlsNeedsAClientCertificateFromTheConfiguredCa) {
  Certs certs;
  ServerOptions options = ::metasrv::testing::LoopbackOptions();
  options.tls_cert = certs.Path("server.pem");
  options.tls_key = certs.Path("server.key");
  options.tls_client_ca = certs.Path("ca1.pem");
  auto server = StartInProcess(options);
  ASSERT_NE(server, nullptr);
  EXPECT_TRUE(Reachable(server->advertised_addr(), Tls(certs, "client1")));
  EXPECT_FALSE(Reachable(server->advertised_addr(), Tls(certs)));
  EXPECT_FALSE(Reachable(server->advertised_addr(), Tls(certs, "client2")));
  EXPECT_FALSE(
      Reachable(server->advertised_addr(), grpc::InsecureChannelCredentials()));
}

// The contexts are made from the PEM texts in memory: a chain file's
// intermediate goes out after the leaf (a client that trusts only the root
// connects), and every CA of a client-CA bundle is trusted.
TEST(TlsTest, AChainFileAndACaBundleServeAsFiles) {
  Certs certs;
  certs.IssueServerThroughIntermediate("leaf");
  char made[] = "/tmp/metasrv-tls-XXXXXX";
  ASSERT_NE(mkdtemp(made), nullptr);
  const std::string dir = made;
  std::ofstream(dir + "/cas.pem")
      << certs.Read("ca2.pem") << certs.Read("ca1.pem");
  ServerOptions options = ::metasrv::testing::LoopbackOptions();
  options.tls_cert = certs.Path("leaf-chain.pem");
  options.tls_key = certs.Path("leaf.key");
  options.tls_client_ca = dir + "/cas.pem";
  auto server = StartInProcess(options);
  ASSERT_NE(server, nullptr);
  const std::string addr = server->advertised_addr();
  EXPECT_TRUE(Reachable(addr, Tls(certs, "client1")));  // ca1, second.
  EXPECT_TRUE(Reachable(addr, Tls(certs, "client2")));  // ca2, first.
  EXPECT_FALSE(Reachable(addr, Tls(certs)));  // No client certificate.
  // Served without its intermediate, the leaf is not trusted.
  options.tls_cert = certs.Path("leaf.pem");
  options.tls_client_ca.clear();
  server = StartInProcess(options);
  ASSERT_NE(server, nullptr);
  EXPECT_FALSE(Reachable(server->advertised_addr(), Tls(certs)));
  std::filesystem::remove_all(dir);
}

TEST(TlsTest, HalfConfiguredTlsIsAStartError) {
  ServerOptions options = ::metasrv::testing::LoopbackOptions();
  options.bind_addr = "127.0.0.1:0";
  options.tls_cert = "/nonexistent/cert.pem";
  EXPECT_EQ(MetasrvServer::Start(options).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// Replaces `path` whole: written aside, then renamed.
void Replace(const std::string& path, const std::string& text) {
  std::ofstream(path + ".new") << text;
  ASSERT_EQ(rename((path + ".new").c_str(), path.c_str()), 0);
}

double Rotations(int port, const std::string& result) {
  return ScrapeMetrics(port)[absl::StrCat(
      "metasrv_tls_rotations_total{result=\"", result, "\"}")];
}

// Issue 38, item 3, at run time: a rotation to a mismatched pair (a new
// certificate, the old key) serves nothing new: the last good pair keeps
// serving every new connection, a warning is logged and it is counted;
// the fixed rotation is served, logged and counted.
TEST(TlsTest, AMismatchedRotationKeepsTheLastGoodPairServing) {
  RotatableFiles files;
  Certs& certs = files.certs;
  const std::string& cert = files.cert;
  const std::string& key = files.key;
  ServerOptions options = files.Options();
  options.metrics_addr = "127.0.0.1:0";
  CapturedLog log;
  auto server = StartInProcess(options);
  ASSERT_NE(server, nullptr);
  const std::string addr = server->advertised_addr();
  const int port = server->metrics_port();
  ASSERT_EQ(PresentedCertificate(addr, certs), certs.Read("server.pem"));
  // Only the certificate is renewed; its key is left behind.
  Replace(cert, certs.Read("renewed.pem"));
  ASSERT_TRUE(WaitFor([&] { return Rotations(port, "refused") == 1; }));
  EXPECT_EQ(PresentedCertificate(addr, certs), certs.Read("server.pem"));
  EXPECT_EQ(Rotations(port, "installed"), 0);
  // Now the key follows: the pair matches and is served.
  Replace(key, certs.Read("renewed.key"));
  ASSERT_TRUE(WaitFor([&] { return Rotations(port, "installed") == 1; }));
  EXPECT_TRUE(WaitFor(
      [&] {
        return PresentedCertificate(addr, certs) == certs.Read("renewed.pem");
      },
      absl::Seconds(15)));
  EXPECT_EQ(Rotations(port, "refused"), 1);
  server.reset();
  const std::string written = log.Restore();
  EXPECT_NE(written.find("TLS: the changed certificate files are not served"),
            std::string::npos)
      << written;
  EXPECT_NE(written.find("TLS: serving the renewed certificate from " + cert),
            std::string::npos)
      << written;
}

// Issue 46: a rotation that writes the certificate, then the key, a moment
// later (well within one refresh) is one rotation, not a refusal; the
// served certificate's expiry is a metric.
TEST(TlsTest, ATwoFileRotationIsServedNotRefusedAndItsExpiryExported) {
  RotatableFiles files;
  Certs& certs = files.certs;
  ServerOptions options = files.Options();
  options.metrics_addr = "127.0.0.1:0";
  auto server = StartInProcess(options);
  ASSERT_NE(server, nullptr);
  const int port = server->metrics_port();
  const double now = absl::ToUnixSeconds(absl::Now());
  const double expiry = ScrapeMetrics(port).at(
      "metasrv_tls_certificate_expiry_timestamp_seconds");
  EXPECT_GT(expiry, now + 86400) << "valid for a day at least";
  EXPECT_LT(expiry, now + 20 * 365 * 86400.0);
  Replace(files.cert, certs.Read("renewed.pem"));
  // Under one refresh period: at most one refresh sees the torn pair.
  absl::SleepFor(absl::Milliseconds(1500));  // The refresh: every 2 s.
  Replace(files.key, certs.Read("renewed.key"));
  ASSERT_TRUE(WaitFor([&] { return Rotations(port, "installed") == 1; }));
  EXPECT_EQ(Rotations(port, "refused"), 0);
  EXPECT_GE(ScrapeMetrics(port).at(
                "metasrv_tls_certificate_expiry_timestamp_seconds"),
            expiry);
}

}  // namespace
}  // namespace metasrv::server
