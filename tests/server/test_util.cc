#include "tests/server/test_util.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "gtest/gtest.h"
#include "server/ops/metrics.h"
#include "server/ops/net_util.h"

extern char** environ;

namespace metasrv::testing {
namespace {

// In-process servers poll gRPC's client channels (their elections') as the
// binary does (main.cc): every 100 ms, set before gRPC starts in a test.
[[maybe_unused]] const bool kBackupPolling = [] {
  setenv("GRPC_CLIENT_CHANNEL_BACKUP_POLL_INTERVAL_MS", "100", 0);
  return true;
}();

}  // namespace

bool WaitFor(const std::function<bool()>& done, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (!done()) {
    if (absl::Now() > deadline) return done();
    absl::SleepFor(absl::Milliseconds(5));
  }
  return true;
}

int FreePort() {
  // The kernel picks one on 127.0.0.1; released for the caller.
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), len) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  EXPECT_NE(port, 0) << std::strerror(errno);
  close(fd);
  return port;
}

int ListenSilently(int* port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (fd < 0 ||
      bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(fd, 16) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ADD_FAILURE() << "no listening socket: " << strerror(errno);
    if (fd >= 0) close(fd);
    return -1;
  }
  *port = ntohs(addr.sin_port);
  return fd;
}

meta::HeartbeatRequest Request(meta::Role role, uint64_t member_id) {
  meta::HeartbeatRequest req;
  req.mutable_header()->set_protocol_version(1);
  req.mutable_header()->set_role(role);
  req.mutable_header()->set_member_id(member_id);
  return req;
}

meta::HeartbeatRequest FlowReport(
    uint64_t member_id,
    const std::vector<std::tuple<uint32_t, uint64_t, int64_t>>& flows) {
  meta::HeartbeatRequest req = Request(meta::FLOWNODE, member_id);
  req.mutable_peer()->set_id(member_id);
  auto* stat = req.mutable_flow_stat();
  for (const auto& [id, size, time] : flows) {
    (*stat->mutable_flow_stat_size())[id] = size;
    (*stat->mutable_flow_last_exec_time_map())[id] = time;
  }
  return req;
}

HeartbeatClient::HeartbeatClient(const std::shared_ptr<grpc::Channel>& channel)
    : stub_(meta::Heartbeat::NewStub(channel)),
      stream_(stub_->Heartbeat(&context_)) {}

HeartbeatClient::~HeartbeatClient() {
  if (!closed_) {
    context_.TryCancel();
    stream_->Finish().IgnoreError();
  }
}

std::optional<meta::HeartbeatResponse> HeartbeatClient::Call(
    const meta::HeartbeatRequest& request) {
  if (!stream_->Write(request)) return std::nullopt;
  meta::HeartbeatResponse response;
  if (!stream_->Read(&response)) return std::nullopt;
  return response;
}

grpc::Status HeartbeatClient::Close() {
  closed_ = true;
  stream_->WritesDone();
  meta::HeartbeatResponse drain;
  while (stream_->Read(&drain)) {
  }
  return stream_->Finish();
}

std::shared_ptr<grpc::Channel> Connect(const std::string& addr) {
  return grpc::CreateChannel(addr, grpc::InsecureChannelCredentials());
}

std::shared_ptr<grpc::Channel> ConnectOwn(const std::string& addr,
                                          grpc::ChannelArguments args) {
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return grpc::CreateCustomChannel(addr, grpc::InsecureChannelCredentials(),
                                   args);
}

int ConnectTcp(const std::string& addr) {
  std::string host;
  int port = 0;
  if (!server::SplitHostPort(addr, &host, &port).ok()) return -1;
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, host.c_str(), &sa.sin_addr) != 1) return -1;
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

bool AcceptsTcp(const std::string& addr) {
  const int fd = ConnectTcp(addr);
  if (fd < 0) return false;
  close(fd);
  return true;
}

HttpResult HttpGet(int port, const std::string& path) {
  HttpResult out;
  const int fd = ConnectTcp(absl::StrCat("127.0.0.1:", port));
  if (fd < 0) return out;
  // A server that never answers fails the call (status 0), not the run.
  const timeval ten_seconds{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &ten_seconds, sizeof(ten_seconds));
  const std::string req =
      absl::StrCat("GET ", path, " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
  if (write(fd, req.data(), req.size()) == static_cast<ssize_t>(req.size())) {
    std::string all;
    char buf[8192];
    ssize_t n;
    while ((n = read(fd, buf, sizeof(buf))) > 0)
      all.append(buf, static_cast<size_t>(n));
    const size_t sp = all.find(' ');
    const size_t body = all.find("\r\n\r\n");
    if (sp != std::string::npos && body != std::string::npos) {
      out.status = std::atoi(all.c_str() + sp + 1);
      out.body = all.substr(body + 4);
    }
  }
  close(fd);
  return out;
}

FlowStateRows GetFlowState(const std::shared_ptr<grpc::Channel>& channel,
                           const std::vector<uint32_t>& flow_ids) {
  auto stub = metasrv::v1::FlowState::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  metasrv::v1::GetFlowStateRequest req;
  for (uint32_t id : flow_ids) req.add_flow_ids(id);
  metasrv::v1::GetFlowStateResponse resp;
  grpc::Status s = stub->GetFlowState(&ctx, req, &resp);
  EXPECT_TRUE(s.ok()) << s.error_message();
  const int n = resp.flow_ids_size();
  EXPECT_EQ(resp.fields_size(), n);
  EXPECT_EQ(resp.state_sizes_size(), n);
  EXPECT_EQ(resp.last_exec_times_ms_size(), n);
  EXPECT_EQ(resp.start_times_ms_size(), n);
  FlowStateRows rows;
  rows.found = resp.found();
  for (int i = 0; i < n && i < resp.start_times_ms_size(); ++i) {
    rows.flows.push_back({resp.flow_ids(i), resp.fields(i), resp.state_sizes(i),
                          resp.last_exec_times_ms(i), resp.start_times_ms(i)});
  }
  return rows;
}

std::optional<std::string> RangeGet(
    const std::shared_ptr<grpc::Channel>& channel, const std::string& key) {
  auto stub = meta::Cluster::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  meta::RangeRequest req;
  req.mutable_header()->set_role(meta::FRONTEND);
  req.set_key(key);
  meta::RangeResponse resp;
  grpc::Status s = stub->Range(&ctx, req, &resp);
  EXPECT_TRUE(s.ok()) << s.error_message();
  EXPECT_FALSE(resp.header().has_error()) << resp.header().error().err_msg();
  if (resp.kvs_size() == 0) return std::nullopt;
  return resp.kvs(0).value();
}

std::string AskLeader(const std::shared_ptr<grpc::Channel>& channel) {
  auto stub = meta::Heartbeat::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(1));
  meta::AskLeaderRequest req;
  req.mutable_header()->set_role(meta::FLOWNODE);
  meta::AskLeaderResponse resp;
  if (!stub->AskLeader(&ctx, req, &resp).ok()) return "";
  return resp.leader().addr();
}

bool IsServing(const std::shared_ptr<grpc::Channel>& channel) {
  auto stub = grpc::health::v1::Health::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(1));
  grpc::health::v1::HealthCheckRequest req;
  grpc::health::v1::HealthCheckResponse resp;
  return stub->Check(&ctx, req, &resp).ok() &&
         resp.status() == grpc::health::v1::HealthCheckResponse::SERVING;
}

ChildProcess::ChildProcess(const std::vector<std::string>& argv) {
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
    ADD_FAILURE() << "pipe2 failed";
    return;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
  std::vector<char*> args;
  for (const std::string& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  if (posix_spawn(&pid_, args[0], &actions, nullptr, args.data(), environ) !=
      0) {
    ADD_FAILURE() << "cannot start " << argv[0];
    pid_ = -1;
  }
  posix_spawn_file_actions_destroy(&actions);
  close(pipe_fds[1]);
  stdout_fd_ = pipe_fds[0];
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  if (stdout_fd_ >= 0) close(stdout_fd_);
}

std::optional<std::string> ChildProcess::ReadLine(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    const size_t nl = buffered_.find('\n');
    if (nl != std::string::npos) {
      std::string line = buffered_.substr(0, nl);
      buffered_.erase(0, nl + 1);
      return line;
    }
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) return std::nullopt;
    pollfd pfd{stdout_fd_, POLLIN, 0};
    if (poll(&pfd, 1, static_cast<int>(absl::ToInt64Milliseconds(left)) + 1) <=
        0) {
      continue;
    }
    char buf[4096];
    const ssize_t n = read(stdout_fd_, buf, sizeof(buf));
    if (n <= 0) return std::nullopt;
    buffered_.append(buf, static_cast<size_t>(n));
  }
}

void ChildProcess::Signal(int signal) {
  if (pid_ > 0) kill(pid_, signal);
}

std::optional<int> ChildProcess::Wait(absl::Duration timeout) {
  if (pid_ <= 0) return std::nullopt;
  std::optional<int> status;
  WaitFor(
      [&] {
        int st = 0;
        if (waitpid(pid_, &st, WNOHANG) == pid_) status = st;
        return status.has_value();
      },
      timeout);
  if (status.has_value()) pid_ = -1;
  return status;
}

ServerProcess::ServerProcess(std::vector<std::string> extra_args) {
  addr_ = absl::StrCat("127.0.0.1:", FreePort());
  // Every scrape built afresh, as in-process test servers do (above).
  std::vector<std::string> argv = {METASRV_BINARY, "--metrics_addr=127.0.0.1:0",
                                   "--metrics_reuse_threshold=0"};
  for (const std::string& arg : extra_args) {
    if (absl::StartsWith(arg, "--bind_addr=")) addr_ = arg.substr(12);
  }
  argv.push_back("--bind_addr=" + addr_);
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  process_ = std::make_unique<ChildProcess>(argv);
  // Connect only once it listens: a gRPC channel that saw its first attempt
  // refused backs off for seconds before it tries again.
  EXPECT_TRUE(WaitFor([&] { return AcceptsTcp(addr_); }, absl::Seconds(20)))
      << "metasrv did not listen on " << addr_;
  channel_ = Connect(addr_);
  EXPECT_TRUE(WaitFor([&] { return IsServing(channel_); }, absl::Seconds(20)))
      << "metasrv did not start serving on " << addr_;
}

}  // namespace metasrv::testing

namespace metasrv::testing {

std::vector<uint32_t> FlowIds(const metasrv::v1::WatchFlowStateResponse& m) {
  return {m.state().flow_ids().begin(), m.state().flow_ids().end()};
}

std::map<std::string, double> ScrapeMetrics(int port) {
  std::map<std::string, double> out;
  const HttpResult got = HttpGet(port, "/metrics");
  EXPECT_EQ(got.status, 200);
  for (absl::string_view line : absl::StrSplit(got.body, '\n')) {
    if (line.empty() || line[0] == '#') continue;
    const size_t space = line.rfind(' ');
    if (space == absl::string_view::npos) continue;
    double v = 0;
    if (absl::SimpleAtod(line.substr(space + 1), &v)) {
      out[std::string(line.substr(0, space))] = v;
    }
  }
  return out;
}

}  // namespace metasrv::testing
