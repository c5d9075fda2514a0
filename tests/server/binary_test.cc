// The real metasrv binary on a loopback port.
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "metasrv/v1/metasrv.grpc.pb.h"
#include "server/ops/net_util.h"
#include "tests/server/test_util.h"

namespace metasrv::testing {
namespace {

// Sends SIGTERM and expects exit code 0 within 5 s; returns how long it took.
absl::Duration StopWithSigterm(ServerProcess& server) {
  const absl::Time start = absl::Now();
  server.process().Signal(SIGTERM);
  std::optional<int> status = server.process().Wait(absl::Seconds(5));
  const absl::Duration took = absl::Now() - start;
  EXPECT_TRUE(status.has_value()) << "did not exit within 5 s";
  if (status.has_value()) {
    EXPECT_TRUE(WIFEXITED(*status));
    EXPECT_EQ(WEXITSTATUS(*status), 0);
  }
  EXPECT_LT(took, absl::Seconds(5));
  return took;
}

// LeaderChange (admin) with `token`; its status code.
grpc::StatusCode AdminCall(const std::shared_ptr<grpc::Channel>& channel,
                           const std::string& token) {
  auto stub = metasrv::v1::Admin::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.AddMetadata("authorization", "Bearer " + token);
  metasrv::v1::LeaderChangeResponse resp;
  return stub->LeaderChange(&ctx, {}, &resp).error_code();
}

// SIGHUP re-reads the admin token file and never stops the server: open
// streams stay, the new token is needed from then on.
TEST(BinaryTest, SighupRereadsTheAdminTokenAndKeepsServing) {
  char path[] = "/tmp/metasrv-token-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  const std::string old_token(32, 'a'), new_token(32, 'b');
  std::ofstream(path) << old_token << "\n";
  ServerProcess server({absl::StrCat("--admin_token_file=", path)});
  HeartbeatClient stream(server.channel());
  ASSERT_TRUE(stream.Call(FlowReport(1, {{7, 700, 70}})).has_value());
  EXPECT_EQ(AdminCall(server.channel(), old_token), grpc::StatusCode::OK);
  std::ofstream(path, std::ios::trunc) << new_token << "\n";
  server.process().Signal(SIGHUP);
  EXPECT_TRUE(WaitFor([&] {
    return AdminCall(server.channel(), new_token) == grpc::StatusCode::OK;
  }));
  EXPECT_EQ(AdminCall(server.channel(), old_token),
            grpc::StatusCode::PERMISSION_DENIED);
  // Still serving, and the stream opened before it is still open.
  EXPECT_FALSE(server.process().Wait(absl::ZeroDuration()).has_value());
  EXPECT_TRUE(stream.Call(FlowReport(1, {{7, 701, 71}})).has_value());
  unlink(path);
  StopWithSigterm(server);
}

TEST(BinaryTest, ServesReportsAndStopsCleanlyOnSigterm) {
  ServerProcess server;
  HeartbeatClient a(server.channel()), b(server.channel());
  ASSERT_TRUE(a.Call(Request(meta::FLOWNODE, 1)).has_value());
  ASSERT_TRUE(b.Call(Request(meta::FLOWNODE, 2)).has_value());
  ASSERT_TRUE(a.Call(FlowReport(1, {{7, 700, 70}})).has_value());
  ASSERT_TRUE(b.Call(FlowReport(2, {{8, 800, 80}})).has_value());
  auto state = GetFlowState(server.channel());
  ASSERT_TRUE(state.found);
  ASSERT_EQ(state.flows.size(), 2);
  EXPECT_EQ(RangeGet(server.channel(), "__flow/state"),
            R"({"state_size":{"7":700,"8":800},"last_exec_time_map":)"
            R"({"7":70,"8":80},"start_time_map":{}})");

  StopWithSigterm(server);
  EXPECT_EQ(a.Close().error_code(), grpc::StatusCode::UNAVAILABLE);
}

TEST(BinaryTest, SigtermWithThousandOpenStreamsExitsWithinFiveSeconds) {
  ServerProcess server;
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  for (int c = 0; c < 4; ++c) channels.push_back(ConnectOwn(server.addr()));
  std::vector<std::unique_ptr<HeartbeatClient>> clients;
  for (int i = 0; i < 1000; ++i) {
    clients.push_back(std::make_unique<HeartbeatClient>(channels[i % 4]));
    ASSERT_TRUE(
        clients.back()->Call(FlowReport(i, {{static_cast<uint32_t>(i), 1, 1}})))
        << i;
  }
  std::printf("exited %s after SIGTERM\n",
              absl::FormatDuration(StopWithSigterm(server)).c_str());
  int unavailable = 0;
  for (auto& c : clients) {
    if (c->Close().error_code() == grpc::StatusCode::UNAVAILABLE) ++unavailable;
  }
  EXPECT_EQ(unavailable, 1000);
}

TEST(BinaryTest, ClientKilledMidStreamHarmsNothing) {
  ServerProcess server;
  HeartbeatClient stays(server.channel());
  ASSERT_TRUE(stays.Call(Request(meta::FLOWNODE, 1)).has_value());
  ASSERT_TRUE(stays.Call(FlowReport(1, {{1, 100, 10}})).has_value());
  {
    ChildProcess probe({HEARTBEAT_PROBE, server.addr(), "5", "50"});
    ASSERT_EQ(probe.ReadLine(), "ready");
    probe.Signal(SIGKILL);
    ASSERT_TRUE(probe.Wait(absl::Seconds(5)).has_value());
  }
  // The server keeps serving the other stream and every node's state.
  ASSERT_TRUE(stays.Call(FlowReport(1, {{1, 101, 11}})).has_value());
  EXPECT_TRUE(IsServing(server.channel()));
  auto state = GetFlowState(server.channel());
  ASSERT_EQ(state.flows.size(), 2);
  EXPECT_EQ(state.flows[0].state_size, 101u);
  EXPECT_EQ(state.flows[1].flow_id, 50u);
  EXPECT_EQ(state.flows[1].state_size, 4242u);
  // The killed node can come back.
  ChildProcess again({HEARTBEAT_PROBE, server.addr(), "5", "51"});
  ASSERT_EQ(again.ReadLine(), "ready");
  EXPECT_EQ(GetFlowState(server.channel(), {50, 51}).flows.size(), 1);
  EXPECT_TRUE(stays.Close().ok());
}

TEST(BinaryTest, FlagfileConfiguresTheServer) {
  char path[] = "/tmp/metasrv-flags-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  std::ofstream(path) << "--heartbeat_interval=1500ms\n--log_level=debug\n";
  ServerProcess server({absl::StrCat("--flagfile=", path)});
  HeartbeatClient flownode(server.channel());
  auto resp = flownode.Call(Request(meta::FLOWNODE, 1));
  ASSERT_TRUE(resp.has_value());
  EXPECT_EQ(resp->heartbeat_config().heartbeat_interval_ms(), 1500u);
  // Frontends heartbeat six times less often, as GreptimeDB tells them.
  HeartbeatClient frontend(server.channel());
  resp = frontend.Call(Request(meta::FRONTEND, 2));
  ASSERT_TRUE(resp.has_value());
  EXPECT_EQ(resp->heartbeat_config().heartbeat_interval_ms(), 9000u);
  EXPECT_EQ(resp->heartbeat_config().retry_interval_ms(), 3000u);
  unlink(path);
}

TEST(BinaryTest, BadFlagValueExitsWithUsageError) {
  ChildProcess bad(
      {METASRV_BINARY, "--bind_addr=127.0.0.1:0", "--log_level=loud"});
  std::optional<int> status = bad.Wait(absl::Seconds(10));
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(WEXITSTATUS(*status), 2);
}

TEST(BinaryTest, PortInUseFailsToStartNamingTheFlag) {
  ServerProcess first;
  ChildProcess second({"/bin/sh", "-c", "exec \"$0\" \"$@\" 2>&1",
                       METASRV_BINARY, "--bind_addr=" + first.addr()});
  std::string said;
  while (auto line = second.ReadLine(absl::Seconds(10))) said += *line + "\n";
  std::optional<int> status = second.Wait(absl::Seconds(10));
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(WEXITSTATUS(*status), 1);
  EXPECT_NE(said.find("choose another with --bind_addr"), std::string::npos)
      << said;
}

// Issue 38, item 1: bound to 0.0.0.0 with no --server_addr, under the
// systemd unit's RestrictAddressFamilies (no netlink socket, so getifaddrs
// fails), the server still advertises an address of this host that is not
// loopback: the one the kernel routes from. On a host with no route at all
// it exits 2 naming --server_addr instead. The test listens on loopback
// only: a wildcard --server_addr is resolved as a wildcard bind is.
TEST(BinaryTest, AWildcardBindWithoutNetlinkNeverAdvertisesLoopback) {
  const int port = FreePort();
  // Through sh, so that its log (stderr) is read with its stdout.
  ChildProcess server({"/bin/sh", "-c", "exec \"$0\" \"$@\" 2>&1", NO_NETLINK,
                       METASRV_BINARY,
                       absl::StrCat("--bind_addr=127.0.0.1:", port),
                       absl::StrCat("--server_addr=0.0.0.0:", port),
                       "--metrics_addr=127.0.0.1:0"});
  std::string routed = server::RoutedAddress(AF_INET);
  if (routed.empty()) routed = server::RoutedAddress(AF_INET6);
  if (routed.empty()) {
    std::optional<int> status = server.Wait(absl::Seconds(10));
    ASSERT_TRUE(status.has_value());
    EXPECT_EQ(WEXITSTATUS(*status), 2);
    bool named = false;
    while (std::optional<std::string> line = server.ReadLine()) {
      named = named || line->find("--server_addr") != std::string::npos;
    }
    EXPECT_TRUE(named);
    return;
  }
  const std::string local = absl::StrCat("127.0.0.1:", port);
  ASSERT_TRUE(WaitFor([&] { return AcceptsTcp(local); }));
  auto channel = Connect(local);
  std::string advertised;
  ASSERT_TRUE(WaitFor([&] {
    advertised = AskLeader(channel);
    return !advertised.empty();
  }));
  EXPECT_EQ(advertised, server::JoinHostPort(routed, port));
  EXPECT_NE(advertised.rfind("127.", 0), 0u) << advertised;
}

// Reads `server`'s lines until one contains `what`; false after 10 s
// without it (or at its end).
// A new empty file for a config (/tmp/metasrv-reload-*.toml); empty if
// none could be made.
std::string TempTomlPath() {
  char path[] = "/tmp/metasrv-reload-XXXXXX.toml";
  const int fd = mkstemps(path, 5);
  if (fd < 0) return "";
  close(fd);
  return path;
}

bool ReadUntil(ChildProcess& server, const std::string& what,
               std::string* seen) {
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (absl::Now() < deadline) {
    std::optional<std::string> line = server.ReadLine(deadline - absl::Now());
    if (!line.has_value()) return false;
    *seen += *line + "\n";
    if (line->find(what) != std::string::npos) return true;
  }
  return false;
}

// Issue 38, item 7: SIGHUP after a changed log level applied nothing and
// said "reload: done". Now the level applies at once, and a changed
// setting that needs a restart is named.
TEST(BinaryTest, SighupAppliesTheLogLevelAndNamesWhatNeedsARestart) {
  const int port = FreePort();
  const std::string path = TempTomlPath();
  ASSERT_FALSE(path.empty());
  auto write = [&](const char* level, int bind_port) {
    std::ofstream(path, std::ios::trunc)
        << "[logging]\nlevel = \"" << level << "\"\n[grpc]\nbind_addr = "
        << "\"127.0.0.1:" << bind_port << "\"\n[http]\naddr = \"\"\n";
  };
  write("info", port);
  ChildProcess server(
      {"/bin/sh", "-c", "exec \"$0\" \"$@\" 2>&1", METASRV_BINARY, "-c", path});
  const std::string addr = absl::StrCat("127.0.0.1:", port);
  ASSERT_TRUE(WaitFor([&] { return AcceptsTcp(addr); }));
  auto channel = Connect(addr);
  // A heartbeat without a header ends its stream with a debug line.
  auto headless = [&] {
    meta::HeartbeatRequest request = FlowReport(1, {{7, 700, 70}});
    request.clear_header();
    HeartbeatClient stream(channel);
    stream.Call(request);
    stream.Close().IgnoreError();
  };
  headless();
  write("debug", port + 1);
  server.Signal(SIGHUP);
  std::string seen;
  ASSERT_TRUE(
      ReadUntil(server, "reload: --log_level is now debug (was info)", &seen))
      << seen;
  EXPECT_NE(seen.find("reload: --bind_addr changed; it applies at the next "
                      "start"),
            std::string::npos)
      << seen;
  EXPECT_EQ(seen.find("has no header"), std::string::npos) << seen;
  headless();
  EXPECT_TRUE(ReadUntil(server, "heartbeat request has no header", &seen))
      << seen;
  // Still serving where it was.
  EXPECT_TRUE(IsServing(channel));
  unlink(path.c_str());
}

// Issue 46, item 5: with nothing changed, SIGHUP said "--backend changed;
// it applies at the next start (restart the service)" whenever the backend
// was inferred (and would have so named every bound left to a rule). An
// operator who trusted it restarted the leader and lost all flow state. A
// reload compares what is in force with what would be.
TEST(BinaryTest, SighupWithNothingChangedNamesNothing) {
  const int port = FreePort();
  const std::string path = TempTomlPath();
  ASSERT_FALSE(path.empty());
  // No backend (memory_store, inferred), every bound left to its rule.
  std::ofstream(path, std::ios::trunc)
      << "[grpc]\nbind_addr = \"127.0.0.1:" << port
      << "\"\n[http]\naddr = \"\"\n";
  ChildProcess server(
      {"/bin/sh", "-c", "exec \"$0\" \"$@\" 2>&1", METASRV_BINARY, "-c", path});
  const std::string addr = absl::StrCat("127.0.0.1:", port);
  ASSERT_TRUE(WaitFor([&] { return AcceptsTcp(addr); }));
  std::string seen;
  for (int i = 0; i < 2; ++i) {
    server.Signal(SIGHUP);
    ASSERT_TRUE(ReadUntil(server, "reload: done", &seen)) << seen;
  }
  EXPECT_EQ(seen.find("changed; it applies"), std::string::npos) << seen;
  EXPECT_TRUE(IsServing(Connect(addr)));
  unlink(path.c_str());
}

// Issue 46: a value the file gives that the environment replaces is said
// at start and at a reload; with JSON logs, a file that no longer parses at
// a reload is said in a JSON line, not a plain one.
TEST(BinaryTest, OverriddenValuesAreSaidAndAReloadErrorIsAJsonLine) {
  const int port = FreePort();
  const std::string path = TempTomlPath();
  ASSERT_FALSE(path.empty());
  std::ofstream(path, std::ios::trunc)
      << "[logging]\nlog_format = \"json\"\n[grpc]\nbind_addr = \"127.0.0.1:"
      << port << "\"\n[http]\naddr = \"127.0.0.1:1\"\n";
  ChildProcess server({"/bin/sh", "-c", "exec \"$0\" \"$@\" 2>&1",
                       "/usr/bin/env",
                       "GREPTIMEDB_METASRV__HTTP__ADDR=127.0.0.1:0",
                       METASRV_BINARY, "-c", path});
  const std::string addr = absl::StrCat("127.0.0.1:", port);
  ASSERT_TRUE(WaitFor([&] { return AcceptsTcp(addr); }));
  std::string seen;
  const std::string overridden =
      absl::StrCat("metrics_addr: ", path,
                   ": http.addr is overridden by environment "
                   "GREPTIMEDB_METASRV__HTTP__ADDR");
  ASSERT_TRUE(ReadUntil(server, overridden, &seen)) << seen;
  std::ofstream(path, std::ios::trunc) << "[grpc\nbind_addr = \n";
  server.Signal(SIGHUP);
  seen.clear();
  ASSERT_TRUE(ReadUntil(server, "settings stay as they are", &seen)) << seen;
  for (absl::string_view line : absl::StrSplit(seen, '\n')) {
    if (line.empty()) continue;
    EXPECT_TRUE(absl::StartsWith(line, "{") && absl::EndsWith(line, "}"))
        << "not a JSON line: " << line;
  }
  EXPECT_TRUE(IsServing(Connect(addr)));
  unlink(path.c_str());
}

}  // namespace
}  // namespace metasrv::testing
