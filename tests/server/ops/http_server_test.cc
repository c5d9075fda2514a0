// HttpServer: requests have a deadline, and at the connection limit the
// connection that waited longest makes room for a new one.
#include "server/ops/http_server.h"

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/server/test_util.h"

namespace metasrv::server {
namespace {

using testing::ConnectTcp;
using testing::HttpGet;

// Counts what the server closed, by reason.
struct Drops {
  std::atomic<int> late{0};     // kLate.
  std::atomic<int> evicted{0};  // kEvicted.
  std::atomic<int> refused{0};  // kRefused.

  std::function<void(HttpDrop)> Counter() {
    return [this](HttpDrop why) {
      (why == HttpDrop::kLate      ? late
       : why == HttpDrop::kEvicted ? evicted
                                   : refused)
          .fetch_add(1);
    };
  }
};

HttpServer::Routes HealthOnly() {
  HttpServer::Routes routes;
  routes["/health"] = [] { return HttpAnswer{200, "text/plain", "serving\n"}; };
  return routes;
}

// Whether the server closed `fd` within `within` (EOF or reset; any bytes
// it sent first are read and dropped).
bool ClosedWithin(int fd, absl::Duration within) {
  const absl::Time deadline = absl::Now() + within;
  for (;;) {
    const int64_t left = absl::ToInt64Milliseconds(deadline - absl::Now());
    if (left <= 0) return false;
    pollfd pfd{fd, POLLIN, 0};
    if (poll(&pfd, 1, static_cast<int>(left)) != 1) continue;
    char buf[512];
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n == 0 || (n < 0 && errno == ECONNRESET)) return true;
  }
}

TEST(HttpServerTest, ARequestNotAnsweredWithinTheDeadlineIsClosed) {
  Drops drops;
  HttpServer::Options options;
  options.request_deadline = absl::Milliseconds(500);
  options.on_drop = drops.Counter();
  auto server = HttpServer::Start("127.0.0.1:0", HealthOnly(), options);
  ASSERT_TRUE(server.ok()) << server.status();
  const int port = (*server)->port();

  // A slow writer: a byte every 100 ms, well inside any idle timeout.
  const int slow = ConnectTcp(absl::StrCat("127.0.0.1:", port));
  ASSERT_GE(slow, 0);
  const absl::Time start = absl::Now();
  const std::string request = "GET /health HTTP/1.1\r\nHost: x\r\n";
  bool closed = false;
  for (char c : request) {
    if (send(slow, &c, 1, MSG_NOSIGNAL) != 1 ||
        ClosedWithin(slow, absl::Milliseconds(100))) {
      closed = true;
      break;
    }
  }
  EXPECT_TRUE(closed || ClosedWithin(slow, absl::Seconds(5)));
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(450));
  EXPECT_TRUE(testing::WaitFor([&] { return drops.late.load() == 1; },
                               absl::Seconds(5)));
  close(slow);

  // A keep-alive connection idle past the deadline goes too.
  const int idle = ConnectTcp(absl::StrCat("127.0.0.1:", port));
  ASSERT_GE(idle, 0);
  const std::string get = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n";
  ASSERT_EQ(send(idle, get.data(), get.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(get.size()));
  EXPECT_TRUE(ClosedWithin(idle, absl::Seconds(5)));
  EXPECT_TRUE(testing::WaitFor([&] { return drops.late.load() == 2; },
                               absl::Seconds(5)));
  close(idle);
  // Prompt requests are answered as ever.
  EXPECT_EQ(HttpGet(port, "/health").status, 200);
  EXPECT_EQ(HttpGet(port, "/nope").status, 404);
}

TEST(HttpServerTest, AtTheLimitTheOldestConnectionMakesRoom) {
  Drops drops;
  HttpServer::Options options;
  options.max_connections = 8;
  options.on_drop = drops.Counter();
  auto server = HttpServer::Start("127.0.0.1:0", HealthOnly(), options);
  ASSERT_TRUE(server.ok()) << server.status();
  const int port = (*server)->port();
  std::vector<int> idle;
  for (int i = 0; i < 8; ++i) {
    idle.push_back(ConnectTcp(absl::StrCat("127.0.0.1:", port)));
    ASSERT_GE(idle.back(), 0);
    ASSERT_EQ(send(idle.back(), "G", 1, MSG_NOSIGNAL), 1);
  }
  // Every slot held by a peer that sends nothing more; a check still gets
  // in, and the first of them is the one closed for it.
  for (int round = 1; round <= 3; ++round) {
    EXPECT_EQ(HttpGet(port, "/health").status, 200) << round;
  }
  EXPECT_TRUE(ClosedWithin(idle[0], absl::Seconds(5)));
  EXPECT_GE(drops.evicted.load(), 1);
  EXPECT_LE(drops.evicted.load(), 3);
  EXPECT_EQ(drops.late.load(), 0);
  // The newest of the idle ones is still open.
  pollfd pfd{idle.back(), POLLIN, 0};
  EXPECT_EQ(poll(&pfd, 1, 0), 0);
  for (int fd : idle) close(fd);
}

TEST(HttpServerTest, ServesIPv6AndStopsPromptly) {
  auto server = HttpServer::Start("[::1]:0", HealthOnly());
  if (!server.ok()) GTEST_SKIP() << "no IPv6 loopback: " << server.status();
  const int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in6 addr{};
  addr.sin6_family = AF_INET6;
  addr.sin6_port = htons(static_cast<uint16_t>((*server)->port()));
  addr.sin6_addr = in6addr_loopback;
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  const std::string get = "GET /health HTTP/1.0\r\n\r\n";
  ASSERT_EQ(send(fd, get.data(), get.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(get.size()));
  std::string answer;
  char buf[512];
  pollfd pfd{fd, POLLIN, 0};
  while (poll(&pfd, 1, 5000) == 1) {
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    answer.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  EXPECT_EQ(answer.rfind("HTTP/1.1 200", 0), 0u) << answer;
  EXPECT_NE(answer.find("serving\n"), std::string::npos) << answer;
  const absl::Time start = absl::Now();
  server->reset();
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
}

}  // namespace
}  // namespace metasrv::server
