// TcpListener: the ceiling, and running out of descriptors (each test runs
// in its own process under ctest, so lowering this process's limit is safe).
#include "server/ops/tcp_listener.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/server/test_util.h"

namespace metasrv::server {
namespace {

using Outcome = TcpListener::Outcome;

// A socket, not yet connected.
int NewSocket() { return socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0); }

bool ConnectTo(int fd, int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  return connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
}

// Whether the peer closed `fd` (EOF or reset) within a few seconds.
bool ClosedByPeer(int fd) {
  pollfd pfd{fd, POLLIN, 0};
  if (poll(&pfd, 1, 5000) != 1) return false;
  char byte;
  const ssize_t n = recv(fd, &byte, 1, 0);
  return n == 0 || (n < 0 && errno == ECONNRESET);
}

// Accepts until something other than kNone, for up to a few seconds (the
// connection may take a moment to reach the queue).
TcpListener::Accepted AcceptSoon(TcpListener& listener, int ceiling) {
  TcpListener::Accepted accepted;
  testing::WaitFor(
      [&] {
        accepted = listener.Accept(ceiling);
        return accepted.outcome != Outcome::kNone;
      },
      absl::Seconds(5));
  return accepted;
}

TEST(TcpListenerTest, KeepsConnectionsBelowTheCeilingAndClosesTheRest) {
  auto listener = TcpListener::Listen("127.0.0.1:0");
  ASSERT_TRUE(listener.ok()) << listener.status();
  ASSERT_GT((*listener)->port(), 0);
  EXPECT_EQ((*listener)->Accept(1 << 20).outcome, Outcome::kNone);

  const int refused = NewSocket();
  ASSERT_TRUE(ConnectTo(refused, (*listener)->port()));
  EXPECT_EQ(AcceptSoon(**listener, 0).outcome, Outcome::kRefused);
  EXPECT_TRUE(ClosedByPeer(refused));

  const int kept = NewSocket();
  ASSERT_TRUE(ConnectTo(kept, (*listener)->port()));
  const TcpListener::Accepted accepted = AcceptSoon(**listener, 1 << 20);
  ASSERT_EQ(accepted.outcome, Outcome::kAccepted);
  EXPECT_EQ(fcntl(accepted.fd, F_GETFL) & O_NONBLOCK, O_NONBLOCK);
  EXPECT_EQ(fcntl(accepted.fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
  ASSERT_EQ(write(kept, "x", 1), 1);
  char byte = 0;
  pollfd pfd{accepted.fd, POLLIN, 0};
  ASSERT_EQ(poll(&pfd, 1, 5000), 1);
  EXPECT_EQ(read(accepted.fd, &byte, 1), 1);
  EXPECT_EQ(byte, 'x');
  close(accepted.fd);
  close(kept);
  close(refused);
}

TEST(TcpListenerTest, WithNoDescriptorLeftTheSpareClosesWhatWaits) {
  auto listener = TcpListener::Listen("127.0.0.1:0");
  ASSERT_TRUE(listener.ok()) << listener.status();
  std::vector<int> clients;
  for (int i = 0; i < 3; ++i) clients.push_back(NewSocket());
  // Every descriptor taken: lower the limit to what is open, and fill it.
  rlimit saved{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &saved), 0);
  std::vector<int> fillers;
  rlimit low = saved;
  low.rlim_cur = 256;
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
  for (int fd; (fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0;) {
    fillers.push_back(fd);
  }
  ASSERT_EQ(errno, EMFILE);
  for (int client : clients)
    ASSERT_TRUE(ConnectTo(client, (*listener)->port()));

  // gRPC 1.51's listener stopped for good here; this one closes each
  // waiting connection with its spare, and goes on.
  EXPECT_EQ(AcceptSoon(**listener, 1 << 20).outcome, Outcome::kRefused);
  EXPECT_TRUE(ClosedByPeer(clients[0]));
  EXPECT_EQ(AcceptSoon(**listener, 1 << 20).outcome, Outcome::kRefused);
  EXPECT_TRUE(ClosedByPeer(clients[1]));
  // Descriptors free again: accepted as usual.
  for (int fd : fillers) close(fd);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &saved), 0);
  const TcpListener::Accepted accepted = AcceptSoon(**listener, 1 << 20);
  EXPECT_EQ(accepted.outcome, Outcome::kAccepted);
  if (accepted.fd >= 0) close(accepted.fd);
  for (int client : clients) close(client);
}

TEST(TcpListenerTest, WithoutTheSpareTheConnectionWaitsForARetry) {
  const int client = NewSocket();
  rlimit saved{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &saved), 0);
  rlimit low = saved;
  low.rlim_cur = 256;
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
  std::vector<int> fillers;
  for (int fd; (fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0;) {
    fillers.push_back(fd);
  }
  // One descriptor for the listener, none for its spare.
  close(fillers.back());
  fillers.pop_back();
  auto listener = TcpListener::Listen("127.0.0.1:0");
  ASSERT_TRUE(listener.ok()) << listener.status();
  ASSERT_TRUE(ConnectTo(client, (*listener)->port()));
  EXPECT_TRUE(testing::WaitFor(
      [&] { return (*listener)->Accept(1 << 20).outcome == Outcome::kWait; },
      absl::Seconds(5)));
  // One free again: the spare is reopened and closes what waited.
  close(fillers.back());
  fillers.pop_back();
  EXPECT_EQ((*listener)->Accept(1 << 20).outcome, Outcome::kRefused);
  EXPECT_TRUE(ClosedByPeer(client));
  for (int fd : fillers) close(fd);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &saved), 0);
  close(client);
}

TEST(TcpListenerTest, CeilingsLeaveAReserveAboveGrpcAndHalfOfItAboveHttp) {
  const DescriptorCeilings small = DescriptorCeilings::For(256);
  EXPECT_EQ(small.grpc, 256 - 64);
  EXPECT_EQ(small.http, 256 - 32);
  EXPECT_EQ(small.http_connections, 16);
  const DescriptorCeilings large = DescriptorCeilings::For(80000);
  EXPECT_EQ(large.grpc, 70000);
  EXPECT_EQ(large.http, 75000);
  EXPECT_EQ(large.http_connections, 256);
  EXPECT_EQ(DescriptorCeilings::For(1024).http_connections, 32);
}

TEST(TcpListenerTest, RaisesTheSoftLimitToTheHardOne) {
  rlimit limit{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &limit), 0);
  if (limit.rlim_max < 512) GTEST_SKIP() << "hard limit too low to test";
  rlimit low = limit;
  low.rlim_cur = 256;
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
  const int raised = RaiseDescriptorLimit();
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &limit), 0);
  EXPECT_EQ(limit.rlim_cur, limit.rlim_max);
  EXPECT_EQ(static_cast<rlim_t>(raised),
            std::min<rlim_t>(limit.rlim_max, 1 << 30));
}

TEST(TcpListenerTest, ABadOrTakenAddressIsAClearError) {
  EXPECT_EQ(TcpListener::Listen("nonsense").status().code(),
            absl::StatusCode::kInvalidArgument);
  auto first = TcpListener::Listen("127.0.0.1:0");
  ASSERT_TRUE(first.ok());
  auto second =
      TcpListener::Listen("127.0.0.1:" + std::to_string((*first)->port()));
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(second.status().message().find("in use"), std::string::npos)
      << second.status();
}

}  // namespace
}  // namespace metasrv::server
