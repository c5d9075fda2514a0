// The attacks on connections (issue 25, items 1 and 10): the binary under a
// 256-descriptor limit, flooded on each port; and a slowloris on /health.
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "server/metasrv_server.h"
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

TEST(DescriptorLimitTest, TheGrpcPortOutlivesRunningOutOfDescriptors) {
  if (access(kPrlimit, X_OK) != 0) GTEST_SKIP() << "no prlimit";
  const std::string addr = absl::StrCat("127.0.0.1:", FreePort());
  const int http = FreePort();
  auto server = StartLimited(256, addr, http);
  EXPECT_EQ(Metric(http, "process_max_fds"), 256);

  // More idle connections than the process has descriptors. gRPC 1.51's
  // own listener stopped for good at its first EMFILE here.
  std::vector<int> idle = OpenIdle(addr, 300);
  ASSERT_EQ(idle.size(), 300u);
  EXPECT_TRUE(WaitFor(
      [&] {
        return Metric(http,
                      "metasrv_connections_refused_total{port=\"grpc\"}") > 0;
      },
      absl::Seconds(10)));
  // The health check says so while it lasts (and still gets an answer).
  const HttpResult refusing = HttpGet(http, "/health");
  EXPECT_EQ(refusing.status, 503);
  EXPECT_NE(refusing.body.find("file descriptors"), std::string::npos)
      << refusing.body;

  // The attacker leaves: new clients are served again.
  CloseAll(&idle);
  EXPECT_TRUE(WaitFor([&] { return HttpGet(http, "/health").status == 200; },
                      absl::Seconds(20)));
  EXPECT_TRUE(
      WaitFor([&] { return IsServing(ConnectOwn(addr)); }, absl::Seconds(20)));
  EXPECT_EQ(AskLeader(ConnectOwn(addr)), addr);
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
