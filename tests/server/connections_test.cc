// The attacks on connections (issue 25, items 1 and 10): the binary under a
// 256-descriptor limit, flooded on each port; and a slowloris on /health.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "server/metasrv_server.h"
#include "server/ops/net_util.h"
#include "tests/server/in_process_server.h"
#include "tests/server/test_util.h"

namespace metasrv::testing {
namespace {

constexpr char kPrlimit[] = "/usr/bin/prlimit";

// The binary with at most `nofile` descriptors (soft and hard, so it
// cannot raise them), serving gRPC on `addr` and HTTP on `http_port`.
std::unique_ptr<ChildProcess> StartLimited(int nofile, const std::string& addr,
                                           int http_port) {
  auto process = std::make_unique<ChildProcess>(std::vector<std::string>{
      kPrlimit, absl::StrCat("--nofile=", nofile, ":", nofile), METASRV_BINARY,
      "--bind_addr=" + addr,
      absl::StrCat("--metrics_addr=127.0.0.1:", http_port),
      "--metrics_reuse_threshold=0"});
  EXPECT_TRUE(WaitFor([&] { return AcceptsTcp(addr); }, absl::Seconds(20)));
  EXPECT_TRUE(
      WaitFor([&] { return IsServing(ConnectOwn(addr)); }, absl::Seconds(20)));
  return process;
}

double Metric(int http_port, const std::string& name) {
  const std::map<std::string, double> all = ScrapeMetrics(http_port);
  auto it = all.find(name);
  return it == all.end() ? -1 : it->second;
}

std::vector<int> OpenIdle(const std::string& addr, int n) {
  std::vector<int> fds;
  for (int i = 0; i < n; ++i) {
    const int fd = ConnectTcp(addr);
    if (fd >= 0) fds.push_back(fd);
  }
  return fds;
}

void CloseAll(std::vector<int>* fds) {
  for (int fd : *fds) close(fd);
  fds->clear();
}

// A connection to `addr` from `source` (an address of loopback's 127/8),
// or -1.
int ConnectFrom(const std::string& source, const std::string& addr) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in from{};
  from.sin_family = AF_INET;
  std::string host;
  int port = 0;
  sockaddr_in to{};
  to.sin_family = AF_INET;
  if (inet_pton(AF_INET, source.c_str(), &from.sin_addr) != 1 ||
      bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof(from)) != 0 ||
      !server::SplitHostPort(addr, &host, &port).ok() ||
      inet_pton(AF_INET, host.c_str(), &to.sin_addr) != 1) {
    close(fd);
    return -1;
  }
  to.sin_port = htons(static_cast<uint16_t>(port));
  if (connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Issue 58: one host's idle connections (17,485 took every descriptor of
// 1a09b28's leader: honest new connections 0/15, /health 503) and many
// hosts' together, beside an honest client on 127.0.0.1, under a
// 256-descriptor limit: the gRPC port's connections are shared between
// hosts (the oldest of the host holding the most is closed), so the
// attackers never reach the descriptor ceiling, /health stays 200 and the
// honest client is served throughout.
TEST(DescriptorLimitTest, IdleConnectionsOfOneHostOrManyTakeNoDescriptorsOfOthers) {
  if (access(kPrlimit, X_OK) != 0) GTEST_SKIP() << "no prlimit";
  const std::string addr = absl::StrCat("127.0.0.1:", FreePort());
  const int http = FreePort();
  auto server = StartLimited(256, addr, http);
  EXPECT_EQ(Metric(http, "process_max_fds"), 256);
  // The honest client's connection, open before the attack.
  std::shared_ptr<grpc::Channel> honest = ConnectOwn(addr);
  ASSERT_TRUE(IsServing(honest));

  // One host: more idle connections than the process has descriptors.
  std::vector<int> idle;
  for (int i = 0; i < 300; ++i) {
    const int fd = ConnectFrom("127.0.0.2", addr);
    if (fd >= 0) idle.push_back(fd);
  }
  ASSERT_EQ(idle.size(), 300u);
  EXPECT_TRUE(WaitFor(
      [&] {
        return Metric(http, "metasrv_grpc_connections_closed_total"
                            "{reason=\"evicted\"}") >= 300 - 64;
      },
      absl::Seconds(10)));
  EXPECT_EQ(HttpGet(http, "/health").status, 200);
  EXPECT_TRUE(IsServing(honest));
  EXPECT_EQ(AskLeader(honest), addr);
  EXPECT_TRUE(IsServing(ConnectOwn(addr)));  // A new one too.

  // Thirty hosts, ten connections each, on top.
  for (int h = 1; h <= 30; ++h) {
    for (int i = 0; i < 10; ++i) {
      const int fd = ConnectFrom(absl::StrCat("127.0.1.", h), addr);
      if (fd >= 0) idle.push_back(fd);
    }
  }
  ASSERT_EQ(idle.size(), 600u);
  EXPECT_EQ(HttpGet(http, "/health").status, 200);
  EXPECT_TRUE(IsServing(honest));
  EXPECT_EQ(AskLeader(honest), addr);
  EXPECT_TRUE(IsServing(ConnectOwn(addr)));
  EXPECT_EQ(Metric(http, "metasrv_connections_refused_total{port=\"grpc\"}"),
            0);
  EXPECT_LE(Metric(http, "process_open_fds"), 192);
  CloseAll(&idle);
}

TEST(DescriptorLimitTest, IdleHttpSocketsCannotStarveTheGrpcPort) {
  if (access(kPrlimit, X_OK) != 0) GTEST_SKIP() << "no prlimit";
  const std::string addr = absl::StrCat("127.0.0.1:", FreePort());
  const int http = FreePort();
  auto server = StartLimited(256, addr, http);
  std::vector<int> idle = OpenIdle(absl::StrCat("127.0.0.1:", http), 300);
  ASSERT_EQ(idle.size(), 300u);
  // HTTP holds 16 connections at most under this limit: the newest take
  // the places of the oldest, gRPC keeps its descriptors, and checks work.
  EXPECT_EQ(HttpGet(http, "/health").status, 200);
  EXPECT_TRUE(IsServing(ConnectOwn(addr)));
  EXPECT_EQ(AskLeader(ConnectOwn(addr)), addr);
  EXPECT_GE(
      Metric(http, "metasrv_http_connections_closed_total{reason=\"evicted\"}"),
      300 - 16);
  EXPECT_EQ(Metric(http, "metasrv_connections_refused_total{port=\"grpc\"}"),
            0);
  CloseAll(&idle);
}

TEST(SlowlorisTest, HealthChecksAnswerUnderOneByteEveryFewSeconds) {
  // 1,030 attacking sockets and their server ends, in this process.
  rlimit limit{};
  getrlimit(RLIMIT_NOFILE, &limit);
  if (limit.rlim_max < 4096) GTEST_SKIP() << "hard descriptor limit < 4096";
  limit.rlim_cur = limit.rlim_max;
  setrlimit(RLIMIT_NOFILE, &limit);
  server::ServerOptions options = ::metasrv::testing::LoopbackOptions();
  options.bind_addr = "127.0.0.1:0";
  options.metrics_addr = "127.0.0.1:0";
  auto started = server::MetasrvServer::Start(options);
  ASSERT_TRUE(started.ok()) << started.status();
  const int http = (*started)->metrics_port();
  std::vector<int> attackers = OpenIdle(absl::StrCat("127.0.0.1:", http), 1030);
  ASSERT_EQ(attackers.size(), 1030u);
  const std::string header = "GET /health HTTP/1.1\r\nHost: x\r\n";
  for (size_t byte = 0; byte < 4; ++byte) {
    // One more header byte on each socket still open: never a whole head.
    for (int fd : attackers) {
      (void)send(fd, &header[byte], 1, MSG_NOSIGNAL | MSG_DONTWAIT);
    }
    for (const char* path : {"/health", "/ready", "/metrics"}) {
      const absl::Time start = absl::Now();
      EXPECT_EQ(HttpGet(http, path).status, 200) << path << " round " << byte;
      EXPECT_LT(absl::Now() - start, absl::Seconds(2)) << path;
    }
  }
  EXPECT_GE(
      Metric(http, "metasrv_http_connections_closed_total{reason=\"evicted\"}"),
      1030 - 256);
  CloseAll(&attackers);
}

}  // namespace
}  // namespace metasrv::testing
