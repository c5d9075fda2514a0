// The alerting metrics end to end: reports over the wire (or merged
// directly, for 100,000 flows), /metrics scraped over HTTP, time moved on a
// manual clock.
#include "server/ops/flow_alerts.h"

#include <map>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "server/metasrv_server.h"
#include "tests/server/in_process_server.h"
#include "tests/server/test_util.h"

namespace metasrv::server {
namespace {

using ::metasrv::testing::Connect;
using ::metasrv::testing::FlowReport;
using ::metasrv::testing::HeartbeatClient;
using ::metasrv::testing::ScrapeMetrics;

// Samples of `family` with a flow_id label: flow id -> value.
std::map<uint32_t, double> PerFlow(const std::map<std::string, double>& m,
                                   const std::string& family) {
  std::map<uint32_t, double> out;
  const std::string prefix = family + "{flow_id=\"";
  for (const auto& [name, value] : m) {
    if (!absl::StartsWith(name, prefix)) continue;
    out[std::stoul(name.substr(prefix.size()))] = value;
  }
  return out;
}

class FlowAlertsTest : public ::testing::Test {
 protected:
  std::unique_ptr<MetasrvServer> Start(size_t top_flows) {
    ServerOptions options = ::metasrv::testing::LoopbackOptions();
    options.metrics_addr = "127.0.0.1:0";
    options.clock = &clock_;
    options.flow_alerts.top_flows = top_flows;
    return ::metasrv::testing::StartInProcess(options);
  }
  int64_t NowMs() const { return absl::ToUnixMillis(clock_.Now()); }

  core::ManualClock clock_;  // The server's time.
};

TEST_F(FlowAlertsTest, AFlowThatStopsExecutingIsStalledAfterTheThreshold) {
  auto server = Start(20);
  ASSERT_NE(server, nullptr);
  HeartbeatClient a(Connect(server->advertised_addr()));
  HeartbeatClient b(Connect(server->advertised_addr()));
  ASSERT_TRUE(a.Call(FlowReport(1, {{1, 100, NowMs()}})).has_value());
  ASSERT_TRUE(b.Call(FlowReport(2, {{2, 200, NowMs()}})).has_value());
  auto m = ScrapeMetrics(server->metrics_port());
  EXPECT_EQ(m["metasrv_flows_stalled"], 0);
  EXPECT_EQ(PerFlow(m, "metasrv_flow_exec_lag_seconds"),
            (std::map<uint32_t, double>{{1, 0}, {2, 0}}));
  EXPECT_EQ(m["metasrv_flownodes_silent"], 0);

  // Flow 2 keeps executing; flow 1's last execution stays where it was.
  clock_.Advance(absl::Minutes(4));
  ASSERT_TRUE(b.Call(FlowReport(2, {{2, 200, NowMs()}})).has_value());
  m = ScrapeMetrics(server->metrics_port());
  EXPECT_EQ(m["metasrv_flows_stalled"], 0);  // 4 min < 5 min.
  clock_.Advance(absl::Minutes(1) + absl::Seconds(1));
  m = ScrapeMetrics(server->metrics_port());
  EXPECT_EQ(m["metasrv_flows_stalled"], 1);
  EXPECT_EQ(PerFlow(m, "metasrv_flow_exec_lag_seconds"),
            (std::map<uint32_t, double>{{1, 301}, {2, 61}}));
  // The spread over all flows: 61 s and 301 s.
  EXPECT_EQ(m["metasrv_flows_by_exec_lag{le=\"60\"}"], 0);
  EXPECT_EQ(m["metasrv_flows_by_exec_lag{le=\"120\"}"], 1);
  EXPECT_EQ(m["metasrv_flows_by_exec_lag{le=\"300\"}"], 1);
  EXPECT_EQ(m["metasrv_flows_by_exec_lag{le=\"600\"}"], 2);
  EXPECT_EQ(m["metasrv_flows_by_exec_lag{le=\"86400\"}"], 2);
  EXPECT_EQ(m["metasrv_flows_by_exec_lag{le=\"+Inf\"}"], 2);
  // Both nodes silent for more than 30 s: 301 s and 61 s.
  EXPECT_EQ(m["metasrv_flownodes_silent"], 2);
  EXPECT_EQ(m["metasrv_flownode_max_silence_seconds"], 301);

  // It executes again: no longer stalled.
  ASSERT_TRUE(a.Call(FlowReport(1, {{1, 100, NowMs()}})).has_value());
  m = ScrapeMetrics(server->metrics_port());
  EXPECT_EQ(m["metasrv_flows_stalled"], 0);
  EXPECT_EQ(m["metasrv_flownodes_silent"], 1);
}

TEST_F(FlowAlertsTest, TheTopNFollowTheReports) {
  auto server = Start(2);
  ASSERT_NE(server, nullptr);
  HeartbeatClient a(Connect(server->advertised_addr()));
  const int64_t t = NowMs();
  ASSERT_TRUE(a.Call(FlowReport(1, {{1, 10, t - 1000},
                                    {2, 20, t - 5000},
                                    {3, 30, t - 3000},
                                    {4, 40, t - 2000}}))
                  .has_value());
  auto m = ScrapeMetrics(server->metrics_port());
  EXPECT_EQ(PerFlow(m, "metasrv_flow_state_bytes"),
            (std::map<uint32_t, double>{{3, 30}, {4, 40}}));
  EXPECT_EQ(PerFlow(m, "metasrv_flow_exec_lag_seconds"),
            (std::map<uint32_t, double>{{2, 5}, {3, 3}}));
  // Flow 1 grows past all; flow 2 executes: the sets move.
  ASSERT_TRUE(a.Call(FlowReport(1, {{1, 500, t - 1000},
                                    {2, 20, t},
                                    {3, 30, t - 3000},
                                    {4, 40, t - 2000}}))
                  .has_value());
  m = ScrapeMetrics(server->metrics_port());
  EXPECT_EQ(PerFlow(m, "metasrv_flow_state_bytes"),
            (std::map<uint32_t, double>{{1, 500}, {4, 40}}));
  EXPECT_EQ(PerFlow(m, "metasrv_flow_exec_lag_seconds"),
            (std::map<uint32_t, double>{{3, 3}, {4, 2}}));
}

// The case of a load whose flows all lag more than a stalled flow (loadgen's
// execution times are near the epoch): the stalled flow keeps its series
// from scrape to scrape while it stays stalled, so an alert's `for:` holds.
TEST_F(FlowAlertsTest, AStalledFlowKeepsItsSeriesWhenOthersLagMore) {
  auto server = Start(2);
  ASSERT_NE(server, nullptr);
  HeartbeatClient stalled(Connect(server->advertised_addr()));
  HeartbeatClient load(Connect(server->advertised_addr()));
  ASSERT_TRUE(stalled.Call(FlowReport(9, {{9, 1, NowMs()}})).has_value());
  clock_.Advance(absl::Minutes(6));
  ASSERT_TRUE(
      load.Call(FlowReport(1, {{1, 1, NowMs()}, {2, 1, NowMs()}})).has_value());
  auto m = ScrapeMetrics(server->metrics_port());
  EXPECT_EQ(PerFlow(m, "metasrv_flow_exec_lag_seconds"),
            (std::map<uint32_t, double>{{1, 0}, {9, 360}}));
  // Each round the load's flows report times far in the past, a different
  // one lagging most each time. By lag alone the list would change each
  // scrape; the stalled flows listed stay: 9, and 1 from the first round.
  for (int round = 1; round <= 5; ++round) {
    clock_.Advance(absl::Seconds(15));
    ASSERT_TRUE(load.Call(FlowReport(1, {{1, 1, round % 2 ? 1000 : 2000},
                                         {2, 1, round % 2 ? 2000 : 1000}}))
                    .has_value());
    m = ScrapeMetrics(server->metrics_port());
    const auto lag = PerFlow(m, "metasrv_flow_exec_lag_seconds");
    ASSERT_EQ(lag.size(), 2u);
    ASSERT_EQ(lag.count(9), 1u) << "round " << round;
    EXPECT_EQ(lag.at(9), 360 + 15 * round);
    EXPECT_EQ(lag.begin()->first, 1u) << "round " << round;
  }
}

// 100,000 flows: N series per per-flow family, never more; N = 0: none.
TEST_F(FlowAlertsTest, CardinalityIsBoundedAtOneHundredThousandFlows) {
  for (size_t top : {20, 0}) {
    auto server = Start(top);
    ASSERT_NE(server, nullptr);
    for (uint64_t node = 1; node <= 2; ++node) {
      core::FlowStateValue::Builder b;
      for (uint32_t id = 1; id <= 100000; ++id) {
        b.SetStateSize(id, id * node);
        b.SetLastExecTime(id, NowMs() - id);
      }
      ASSERT_TRUE(server->flow_state().Merge(node, b.Build()).ok());
    }
    auto m = ScrapeMetrics(server->metrics_port());
    const auto bytes = PerFlow(m, "metasrv_flow_state_bytes");
    const auto lag = PerFlow(m, "metasrv_flow_exec_lag_seconds");
    EXPECT_EQ(bytes.size(), top);
    EXPECT_EQ(lag.size(), top);
    if (top > 0) {
      // The largest: flows 99,981..100,000 (node 2's sizes).
      EXPECT_EQ(bytes.begin()->first, 99981u);
      EXPECT_EQ(bytes.rbegin()->second, 200000);
      EXPECT_EQ(lag.begin()->first, 99981u);
    }
    EXPECT_EQ(m["metasrv_flows_by_exec_lag{le=\"+Inf\"}"], 100000);
    EXPECT_EQ(m["metasrv_flows_stalled"], 0);  // At most 100 s behind.
    size_t series = 0;
    for (const auto& [name, value] : m) {
      series += absl::StartsWith(name, "metasrv_flow");
    }
    // Per-flow series, plus the fixed ones (16 histogram lines: 14 buckets,
    // stalled; two flownode gauges; the two thresholds; metasrv_flows and
    // metasrv_flow_nodes).
    EXPECT_EQ(series, 2 * top + 21);
  }
}

}  // namespace
}  // namespace metasrv::server
