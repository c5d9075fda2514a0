// What operators rely on: metrics, TLS and mTLS, admin authorization, limits
// and keepalive. In-process servers on loopback.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "metasrv/v1/metasrv.grpc.pb.h"
#include "server/metasrv_server.h"
#include "server/ops/admin_auth.h"
#include "server/ops/log_limit.h"
#include "spdlog/sinks/ostream_sink.h"
#include "spdlog/spdlog.h"
#include "tests/server/certs.h"
#include "tests/server/in_process_server.h"
#include "tests/server/test_util.h"
#include "tests/server/watch_client.h"

namespace metasrv::server {
namespace {

using ::metasrv::testing::Certs;
using ::metasrv::testing::ChildProcess;
using ::metasrv::testing::Connect;
using ::metasrv::testing::FlowReport;
using ::metasrv::testing::GetFlowState;
using ::metasrv::testing::HeartbeatClient;
using ::metasrv::testing::Request;
using ::metasrv::testing::WaitFor;
namespace meta = greptime::v1::meta;

std::unique_ptr<MetasrvServer> StartServer(ServerOptions options) {
  return ::metasrv::testing::StartInProcess(std::move(options));
}

std::map<std::string, double> Scrape(int port) {
  return ::metasrv::testing::ScrapeMetrics(port);
}

// GreptimeDB's own metasrv metrics (src/meta-srv/src/metrics.rs), so that
// its cluster dashboard's panels work, and every call counted by method and
// code under go-grpc-prometheus' names.
TEST(MetricsTest, GreptimeDbsMetricsAndCallsByMethodAndCode) {
  ServerOptions options = ::metasrv::testing::LoopbackOptions();
  options.metrics_addr = "127.0.0.1:0";
  auto server = StartServer(options);
  ASSERT_NE(server, nullptr);
  auto channel = Connect(server->advertised_addr());
  HeartbeatClient a(channel);
  ASSERT_TRUE(a.Call(Request(meta::FLOWNODE, 1)).has_value());
  ASSERT_TRUE(a.Call(FlowReport(1, {{1, 10, 1}, {2, 20, 2}})).has_value());
  EXPECT_TRUE(
      ::metasrv::testing::RangeGet(channel, "__flow/state").has_value());
  HeartbeatClient bad(channel);
  meta::HeartbeatRequest headless;
  ASSERT_FALSE(bad.Call(headless).has_value());
  EXPECT_EQ(bad.Close().error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  const std::string heartbeat =
      "grpc_method=\"Heartbeat\",grpc_service=\"greptime.v1.meta.Heartbeat\","
      "grpc_type=\"bidi_stream\"";
  const std::string range =
      "grpc_method=\"Range\",grpc_service=\"greptime.v1.meta.Cluster\","
      "grpc_type=\"unary\"";
  // The client has its answers before the server is done with each call:
  // the Range call's interceptor and the failed stream count when gRPC
  // releases them, so wait for both (the stream leaves the open count first).
  // A scrape reads the counters before the histograms, so a call counted
  // while one runs can show in its histogram and not yet in its counter:
  // wait for both of the Range call's series.
  std::map<std::string, double> m;
  ASSERT_TRUE(WaitFor([&] {
    m = Scrape(server->metrics_port());
    return m["grpc_server_handled_total{grpc_code=\"InvalidArgument\"," +
             heartbeat + "}"] == 1 &&
           m["grpc_server_handled_total{grpc_code=\"OK\"," + range + "}"] ==
               1 &&
           m["grpc_server_handling_seconds_count{" + range + "}"] == 1;
  }));
  EXPECT_EQ(m["grpc_server_started_total{" + heartbeat + "}"], 2);
  EXPECT_EQ(m["grpc_server_started_total{" + range + "}"], 1);
  EXPECT_EQ(m["grpc_server_handled_total{grpc_code=\"OK\"," + range + "}"], 1);
  EXPECT_EQ(m["grpc_server_handling_seconds_count{" + range + "}"], 1);
  EXPECT_GT(m["grpc_server_handling_seconds_sum{" + range + "}"], 0);
  // Upstream's names, types and labels.
  EXPECT_EQ(m["greptime_meta_heartbeat_rate"], 2);
  EXPECT_EQ(m["greptime_meta_heartbeat_connection_num"], 1);
  EXPECT_EQ(m["greptime_meta_handler_execute_count{name=\"FlowStateHandler\"}"],
            1);
  EXPECT_EQ(m["greptime_meta_heartbeat_stat_memory_size_count"], 1);
  EXPECT_GT(m["greptime_meta_heartbeat_stat_memory_size_sum"], 10);
  EXPECT_EQ(m["greptime_meta_kv_request_elapsed_count{op=\"range\","
              "target=\"Memory\"}"],
            1);
  EXPECT_EQ(m["greptime_meta_kv_request_elapsed_count{op=\"batch_get\","
              "target=\"Memory\"}"],
            0);
  EXPECT_EQ(m["metasrv_has_leader"], 1);
  // Standalone: no store.
  EXPECT_EQ(m.count("metasrv_store_healthy"), 0u);
  ASSERT_TRUE(a.Close().ok());
}

// WatchFlowState counts itself (the interceptor would run on each message it
// pushes): one start per watcher, handled with the code it ended with.
TEST(MetricsTest, WatchersAreCountedOnceWithTheirEndingCode) {
  ServerOptions options = ::metasrv::testing::LoopbackOptions();
  options.metrics_addr = "127.0.0.1:0";
  options.max_streams = 1;  // A second watcher is refused.
  auto server = StartServer(options);
  ASSERT_NE(server, nullptr);
  auto channel = Connect(server->advertised_addr());
  auto stub = metasrv::v1::FlowState::NewStub(channel);
  HeartbeatClient a(channel);
  ASSERT_TRUE(a.Call(Request(meta::FLOWNODE, 1)).has_value());
  ASSERT_TRUE(a.Call(FlowReport(1, {{1, 10, 1}})).has_value());
  const std::string watch =
      "grpc_method=\"WatchFlowState\",grpc_service=\"metasrv.v1.FlowState\","
      "grpc_type=\"server_stream\"";
  {
    ::metasrv::testing::WatchClient first(stub.get());
    ASSERT_TRUE(first.WaitFor([](const auto& m) { return !m.empty(); }));
    ::metasrv::testing::WatchClient second(stub.get());
    ASSERT_TRUE(second.WaitDone());
    EXPECT_EQ(second.status()->error_code(),
              grpc::StatusCode::RESOURCE_EXHAUSTED);
  }  // The first is cancelled by its client.
  // Each call is counted when gRPC is done with it, in either order, and a
  // scrape reads the counters before the histograms (a call counted while
  // one runs shows in its histogram only; CI saw that): wait until both
  // calls are counted, each with its own code.
  std::map<std::string, double> m;
  const std::string handled = "grpc_server_handled_total{grpc_code=";
  EXPECT_TRUE(WaitFor([&] {
    m = Scrape(server->metrics_port());
    return m[handled + "\"Canceled\"," + watch + "}"] == 1 &&
           m[handled + "\"ResourceExhausted\"," + watch + "}"] == 1 &&
           m["grpc_server_handling_seconds_count{" + watch + "}"] == 2;
  })) << "Canceled "
      << m[handled + "\"Canceled\"," + watch + "}"] << ", ResourceExhausted "
      << m[handled + "\"ResourceExhausted\"," + watch + "}"];
  EXPECT_EQ(m["grpc_server_started_total{" + watch + "}"], 2);
  double all_handled = 0;
  for (const auto& [series, value] : m) {
    if (series.rfind(handled, 0) == 0 &&
        series.find(watch) != std::string::npos) {
      all_handled += value;
    }
  }
  EXPECT_EQ(all_handled, 2) << "a watcher counted twice or with another code";
  ASSERT_TRUE(a.Close().ok());
}

TEST(MetricsTest, ValuesMoveWithTraffic) {
  ServerOptions options = ::metasrv::testing::LoopbackOptions();
  options.metrics_addr = "127.0.0.1:0";
  auto server = StartServer(options);
  ASSERT_NE(server, nullptr);
  ASSERT_NE(server->metrics_port(), 0);
  auto channel = Connect(server->advertised_addr());
  auto before = Scrape(server->metrics_port());
  EXPECT_EQ(before["metasrv_reports_merged_total"], 0);
  EXPECT_EQ(before["metasrv_is_leader"], 1);
  EXPECT_EQ(before["metasrv_kv_keys"], 0);

  HeartbeatClient a(channel);
  ASSERT_TRUE(a.Call(Request(meta::FLOWNODE, 1)).has_value());
  ASSERT_TRUE(a.Call(FlowReport(1, {{1, 10, 1}, {2, 20, 2}})).has_value());
  ASSERT_TRUE(a.Call(FlowReport(1, {{1, 11, 1}, {2, 21, 2}})).has_value());
  HeartbeatClient b(channel);
  meta::HeartbeatRequest datanode = FlowReport(2, {{3, 30, 3}});
  datanode.mutable_header()->set_role(meta::DATANODE);
  ASSERT_TRUE(b.Call(datanode).has_value());
  ASSERT_TRUE(b.Call(Request(meta::FRONTEND, 3)).has_value());

  auto m = Scrape(server->metrics_port());
  EXPECT_EQ(m["metasrv_heartbeats_received_total{role=\"flownode\"}"], 3);
  EXPECT_EQ(m["metasrv_heartbeats_received_total{role=\"datanode\"}"], 1);
  EXPECT_EQ(m["metasrv_heartbeats_received_total{role=\"frontend\"}"], 1);
  EXPECT_EQ(m["metasrv_reports_merged_total"], 2);
  EXPECT_EQ(m["metasrv_reports_ignored_total{reason=\"not_flownode\"}"], 1);
  EXPECT_EQ(m["metasrv_merge_duration_seconds_count"], 2);
  EXPECT_GT(m["metasrv_merge_duration_seconds_sum"], 0);
  EXPECT_EQ(m["metasrv_open_streams"], 2);
  EXPECT_EQ(m["metasrv_flow_nodes"], 1);
  EXPECT_EQ(m["metasrv_flows"], 2);
  EXPECT_EQ(m["metasrv_kv_keys"], 2);  // Report, aggregate.
  EXPECT_EQ(m["metasrv_leader_changes_total{cause=\"admin\"}"], 0);
  // The standard process metrics, read at scrape time.
  EXPECT_GT(m["process_resident_memory_bytes"], 1 << 20);
  EXPECT_GT(m["process_virtual_memory_bytes"],
            m["process_resident_memory_bytes"]);
  EXPECT_GT(m["process_open_fds"], 3);
  EXPECT_GE(m["process_max_fds"], m["process_open_fds"]);
  // The server runs in this process: its CPU time is ours, to the clock
  // tick /proc counts in (a fresh process may not have used one yet).
  timespec cpu{};
  ASSERT_EQ(clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu), 0);
  const double cpu_seconds = cpu.tv_sec + cpu.tv_nsec / 1e9;
  EXPECT_LE(m["process_cpu_seconds_total"], cpu_seconds + 0.011);
  EXPECT_GE(m["process_cpu_seconds_total"], cpu_seconds - 0.05);
  const double now = absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch());
  EXPECT_LE(m["process_start_time_seconds"], now + 1);
  EXPECT_GT(m["process_start_time_seconds"], now - 24 * 3600);
  bool build_info = false;
  for (const auto& [line, value] : m) {
    if (absl::StartsWith(line, "metasrv_build_info{")) {
      build_info = value == 1 && absl::StrContains(line, "version=\"0.1.0\"") &&
                   absl::StrContains(line, "commit=\"") &&
                   absl::StrContains(line, "build_type=\"");
    }
  }
  EXPECT_TRUE(build_info);

  // A standalone LeaderChange wipes the state and is counted as such.
  auto admin = metasrv::v1::Admin::NewStub(channel);
  grpc::ClientContext ctx;
  metasrv::v1::LeaderChangeResponse resp;
  ASSERT_TRUE(admin->LeaderChange(&ctx, {}, &resp).ok());
  m = Scrape(server->metrics_port());
  EXPECT_EQ(m["metasrv_leader_changes_total{cause=\"admin\"}"], 1);
  EXPECT_EQ(m["metasrv_leader_changes_total{cause=\"elected\"}"], 0);
  EXPECT_EQ(m["metasrv_kv_keys"], 0);

  ASSERT_TRUE(a.Close().ok());
  ASSERT_TRUE(b.Close().ok());
  EXPECT_TRUE(WaitFor([&] {
    return Scrape(server->metrics_port())["metasrv_open_streams"] == 0;
  }));
}

class AdminAuthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char path[] = "/tmp/metasrv-token-XXXXXX";
    const int fd = mkstemp(path);
    ASSERT_GE(fd, 0);
    close(fd);
    token_path_ = path;
    std::ofstream(token_path_) << kToken << "\n";
    // Capture the log, to check that no token ever reaches it. The log's
    // rate limits are process-wide: forget what an earlier test in this
    // binary counted, or its refusals would leave this one's out.
    SetLogLineInterval(absl::Seconds(10));
    sink_ = std::make_shared<spdlog::sinks::ostream_sink_mt>(log_);
    previous_ = spdlog::default_logger();
    spdlog::set_default_logger(
        std::make_shared<spdlog::logger>("capture", sink_));
    ServerOptions options = ::metasrv::testing::LoopbackOptions();
    options.admin_token_file = token_path_;
    server_ = StartServer(options);
    ASSERT_NE(server_, nullptr);
    channel_ = Connect(server_->advertised_addr());
  }
  void TearDown() override {
    server_.reset();
    spdlog::set_default_logger(previous_);
    unlink(token_path_.c_str());
  }

  grpc::Status LeaderChange(const std::string& authorization) {
    auto stub = metasrv::v1::Admin::NewStub(channel_);
    grpc::ClientContext ctx;
    if (!authorization.empty()) ctx.AddMetadata("authorization", authorization);
    metasrv::v1::LeaderChangeResponse resp;
    return stub->LeaderChange(&ctx, {}, &resp);
  }

  static constexpr char kToken[] = "s3cret-admin-token-0123456789";
  std::string token_path_;
  std::ostringstream log_;
  std::shared_ptr<spdlog::sinks::ostream_sink_mt> sink_;
  std::shared_ptr<spdlog::logger> previous_;
  std::unique_ptr<MetasrvServer> server_;
  std::shared_ptr<grpc::Channel> channel_;
};

TEST_F(AdminAuthTest, MissingOrWrongTokenChangesNothing) {
  HeartbeatClient client(channel_);
  ASSERT_TRUE(client.Call(FlowReport(1, {{1, 1, 1}})).has_value());
  grpc::Status missing = LeaderChange("");
  EXPECT_EQ(missing.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  grpc::Status wrong = LeaderChange("Bearer s3cret-admin-token-0123456780");
  EXPECT_EQ(wrong.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  grpc::Status not_bearer = LeaderChange(std::string("Basic ") + kToken);
  EXPECT_EQ(not_bearer.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(server_->flow_state().size(), 2u);
  EXPECT_TRUE(GetFlowState(channel_).found);
  // The right token works.
  EXPECT_TRUE(LeaderChange(std::string("Bearer ") + kToken).ok());
  EXPECT_FALSE(GetFlowState(channel_).found);
  // Refusals were logged, and no token anywhere.
  sink_->flush();
  const std::string log = log_.str();
  EXPECT_NE(log.find("refused"), std::string::npos);
  for (const grpc::Status& s : {missing, wrong, not_bearer}) {
    EXPECT_EQ(s.error_message().find("s3cret"), std::string::npos);
  }
  EXPECT_EQ(log.find("s3cret"), std::string::npos) << log;
}

TEST_F(AdminAuthTest, ForgetFlowsNeedsTheTokenToo) {
  HeartbeatClient client(channel_);
  ASSERT_TRUE(client.Call(FlowReport(1, {{1, 1, 1}, {2, 2, 2}})).has_value());
  auto forget = [&](const std::string& authorization,
                    metasrv::v1::ForgetFlowsResponse* resp) {
    auto stub = metasrv::v1::Admin::NewStub(channel_);
    grpc::ClientContext ctx;
    if (!authorization.empty()) ctx.AddMetadata("authorization", authorization);
    metasrv::v1::ForgetFlowsRequest req;
    req.add_flow_ids(1);
    return stub->ForgetFlows(&ctx, req, resp);
  };
  metasrv::v1::ForgetFlowsResponse resp;
  EXPECT_EQ(forget("", &resp).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(forget("Bearer wrong-token", &resp).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(GetFlowState(channel_).flows.size(), 2u);  // Nothing forgotten.
  ASSERT_TRUE(forget(std::string("Bearer ") + kToken, &resp).ok());
  EXPECT_EQ(resp.forgotten_flows(), 1u);
  const auto rows = GetFlowState(channel_);
  ASSERT_EQ(rows.flows.size(), 1u);
  EXPECT_EQ(rows.flows[0].flow_id, 2u);
  sink_->flush();
  EXPECT_NE(log_.str().find("admin call ForgetFlows"), std::string::npos);
  EXPECT_EQ(log_.str().find("s3cret"), std::string::npos);
}

TEST(AdminAuthUnitTest, WithoutTokenOnlyLoopbackPeers) {
  AdminAuth auth;
  EXPECT_TRUE(auth.Check("", /*from_loopback=*/true).ok());
  EXPECT_EQ(auth.Check("", /*from_loopback=*/false).code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(auth.Check("Bearer x", /*from_loopback=*/false).code(),
            absl::StatusCode::kPermissionDenied);
}

// A client that stops answering (SIGSTOP: its kernel still holds the TCP
// connection open) is dropped by keepalive and its stream released.
TEST(KeepaliveTest, UnresponsivePeerIsDroppedAndItsStreamReleased) {
  ServerOptions options = ::metasrv::testing::LoopbackOptions();
  options.transport.limits.keepalive_time = absl::Seconds(1);
  options.transport.limits.keepalive_timeout = absl::Seconds(1);
  auto server = StartServer(options);
  ASSERT_NE(server, nullptr);
  ChildProcess probe({HEARTBEAT_PROBE, server->advertised_addr(), "5", "50"});
  ASSERT_EQ(probe.ReadLine(), "ready");
  EXPECT_EQ(server->heartbeat_streams(), 1u);
  probe.Signal(SIGSTOP);
  EXPECT_TRUE(WaitFor([&] { return server->heartbeat_streams() == 0; },
                      absl::Seconds(15)));
  probe.Signal(SIGCONT);
  // Its report stays.
  EXPECT_EQ(GetFlowState(Connect(server->advertised_addr())).flows.size(), 1u);
}

}  // namespace
}  // namespace metasrv::server
