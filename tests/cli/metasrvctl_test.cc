// metasrvctl end to end, against the real server binary: one server (the
// replica tests are in metasrvctl_ha_test.cc).
#include <google/protobuf/struct.pb.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/cli/ctl_run.h"
#include "tests/server/test_util.h"

namespace metasrv::testing {
namespace {

TEST(MetasrvctlTest, GetLeaderPeersAndWatch) {
  ServerProcess server;
  const std::string addr = "--addr=" + server.addr();
  CtlRun empty = Ctl({addr, "get"});
  EXPECT_EQ(empty.exit_code, 0);
  EXPECT_NE(empty.out.find("no flow state"), std::string::npos) << empty.out;

  Report(server.channel(), 1, 7, 700);
  Report(server.channel(), 2, 8, 800);
  CtlRun table = Ctl({addr, "get"});
  EXPECT_EQ(table.exit_code, 0);
  EXPECT_NE(table.out.find("FLOW_ID"), std::string::npos);
  EXPECT_NE(
      table.out.find("7            700            77                   -"),
      std::string::npos)
      << table.out;
  CtlRun json = Ctl({addr, "get", "--json", "--flow=8"});
  EXPECT_EQ(json.exit_code, 0);
  EXPECT_TRUE(SameJson(json.out,
                       "{\"found\":true,\"flows\":[{\"flow_id\":8,"
                       "\"state_size\":800,\"last_exec_time_ms\":77}]}"));
  // --json=false is the table.
  CtlRun table_again = Ctl({addr, "get", "--json=false", "--flow=8"});
  EXPECT_NE(table_again.out.find("FLOW_ID"), std::string::npos)
      << table_again.out;

  CtlRun leader = Ctl({addr, "leader"});
  EXPECT_EQ(leader.exit_code, 0);
  EXPECT_EQ(leader.out, server.addr() + "\n");
  CtlRun peers = Ctl({addr, "peers"});
  EXPECT_EQ(peers.exit_code, 0);
  EXPECT_EQ(peers.out, "leader    " + server.addr() + "\n");

  // watch: the first state shows every flow as new; a change shows up next.
  std::vector<std::string> argv = {METASRVCTL_BINARY, addr, "watch",
                                   "--count=50"};
  ChildProcess watch(argv);
  auto first = watch.ReadLine();
  ASSERT_TRUE(first.has_value());
  EXPECT_NE(first->find("new flow 7 state_size=700"), std::string::npos)
      << *first;
  ASSERT_TRUE(watch.ReadLine().has_value());  // flow 8
  Report(server.channel(), 1, 7, 701);
  auto change = watch.ReadLine();
  ASSERT_TRUE(change.has_value());
  EXPECT_NE(change->find("flow 7 state_size=701"), std::string::npos)
      << *change;
  // Node 1 now reports flow 9 only: flow 9 is new and flow 7, which only
  // node 1 held, is removed (watch asks for deltas; the removal comes as
  // removed_flow_ids).
  Report(server.channel(), 1, 9, 900);
  auto added = watch.ReadLine();
  ASSERT_TRUE(added.has_value());
  EXPECT_NE(added->find("new flow 9 state_size=900"), std::string::npos)
      << *added;
  auto removed = watch.ReadLine();
  ASSERT_TRUE(removed.has_value());
  EXPECT_NE(removed->find("flow 7 removed"), std::string::npos) << *removed;
  // --json: one object per change; the first state's flows are new. With
  // a long --interval, the first state still comes at once.
  CtlRun watch_json =
      Ctl({addr, "watch", "--count=1", "--json", "--interval=1h"});
  EXPECT_EQ(watch_json.exit_code, 0);
  const std::vector<std::string> lines =
      absl::StrSplit(watch_json.out, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 2u) << watch_json.out;  // Flows 8 and 9.
  const google::protobuf::Value first_value = ParseJson(lines[0]);
  const auto& first_change = first_value.struct_value().fields();
  EXPECT_EQ(first_change.at("event").string_value(), "new");
  EXPECT_EQ(first_change.at("flow_id").number_value(), 8);
}

TEST(MetasrvctlTest, NodesAndForget) {
  ServerProcess server;
  const std::string addr = "--addr=" + server.addr();
  Report(server.channel(), 1, 7, 700);
  Report(server.channel(), 2, 7, 710);
  Report(server.channel(), 2, 8, 800);  // Node 2's report is now flow 8 only.
  CtlRun nodes = Ctl({addr, "nodes"});
  EXPECT_EQ(nodes.exit_code, 0);
  EXPECT_NE(nodes.out.find("NODE_ID"), std::string::npos) << nodes.out;
  CtlRun json = Ctl({addr, "nodes", "--json"});
  EXPECT_EQ(json.exit_code, 0);
  const google::protobuf::Value list = ParseJson(json.out);
  ASSERT_EQ(list.list_value().values_size(), 2) << json.out;
  for (int i = 0; i < 2; ++i) {
    const auto& node = list.list_value().values(i).struct_value().fields();
    EXPECT_EQ(node.at("node_id").number_value(), i + 1);
    EXPECT_EQ(node.at("flow_count").number_value(), 1);
    EXPECT_GT(node.at("last_heartbeat_ms").number_value(), 1.7e12);
  }

  EXPECT_EQ(Ctl({addr, "forget"}).exit_code, 2);  // --flow or --node.
  EXPECT_EQ(Ctl({addr, "forget", "--flow=7", "--node=1"}).exit_code, 2);
  CtlRun forget = Ctl({addr, "forget", "--flow=7,99"});
  EXPECT_EQ(forget.exit_code, 0);
  EXPECT_EQ(forget.out, "1 flows forgotten; 1 node reports rewritten\n");
  EXPECT_TRUE(SameJson(Ctl({addr, "get", "--json"}).out,
                       "{\"found\":true,\"flows\":[{\"flow_id\":8,"
                       "\"state_size\":800,\"last_exec_time_ms\":77}]}"));
  // A flownode gone for good: forgotten, it leaves `nodes` and its flows.
  CtlRun forget_node = Ctl({addr, "forget", "--node=2,99"});
  EXPECT_EQ(forget_node.exit_code, 0);
  EXPECT_EQ(forget_node.out, "1 flownodes forgotten\n");
  EXPECT_EQ(
      ParseJson(Ctl({addr, "nodes", "--json"}).out).list_value().values_size(),
      1);
  EXPECT_TRUE(SameJson(Ctl({addr, "get", "--json"}).out,
                       "{\"found\":true,\"flows\":[]}"))
      << Ctl({addr, "get", "--json"}).out;
}

// Issue 46, item 2: a node whose reports a limit refuses is listed with the
// limit's words, how many and when; a node refused at --max_nodes, of which
// the leader holds nothing else, too; a merged report clears it.
TEST(MetasrvctlTest, NodesShowsRefusedReportsAndTheLimit) {
  ServerProcess server({"--max_total_flows=3", "--max_nodes=2"});
  const std::string addr = "--addr=" + server.addr();
  auto report = [&](uint64_t node, std::vector<uint32_t> flows) {
    std::vector<std::tuple<uint32_t, uint64_t, int64_t>> entries;
    for (uint32_t flow : flows) entries.emplace_back(flow, 100, 1);
    HeartbeatClient client(server.channel());
    const bool merged = client.Call(FlowReport(node, entries)).has_value();
    return std::make_pair(merged, client.Close());
  };
  // Nodes 1 and 3 report: live for 12 s, they cannot be evicted.
  HeartbeatClient one(server.channel());
  ASSERT_TRUE(one.Call(FlowReport(1, {{1, 100, 1}, {2, 100, 1}})).has_value());
  auto [merged, refused] = report(2, {3, 4});  // 4 flows in all: past 3.
  EXPECT_FALSE(merged);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  report(2, {3, 4});
  HeartbeatClient three(server.channel());
  ASSERT_TRUE(three.Call(FlowReport(3, {{5, 100, 1}})).has_value());
  EXPECT_FALSE(report(4, {6}).first);  // A third node: past --max_nodes.
  CtlRun json = Ctl({addr, "nodes", "--json"});
  EXPECT_EQ(json.exit_code, 0);
  const google::protobuf::Value list = ParseJson(json.out);
  ASSERT_EQ(list.list_value().values_size(), 4) << json.out;
  const auto& two = list.list_value().values(1).struct_value().fields();
  EXPECT_EQ(two.at("node_id").number_value(), 2) << json.out;
  EXPECT_EQ(two.at("refused_reports").number_value(), 2) << json.out;
  EXPECT_NE(two.at("refused").string_value().find("--max_total_flows"),
            std::string::npos)
      << json.out;
  EXPECT_GT(two.at("last_refused_ms").number_value(), 1.7e12);
  const auto& four = list.list_value().values(3).struct_value().fields();
  EXPECT_EQ(four.at("node_id").number_value(), 4) << json.out;
  EXPECT_NE(four.at("refused").string_value().find("--max_nodes"),
            std::string::npos)
      << json.out;
  for (int i : {0, 2}) {  // Nodes 1 and 3: merged, never refused.
    EXPECT_EQ(
        list.list_value().values(i).struct_value().fields().count("refused"),
        0u);
  }
  CtlRun table = Ctl({addr, "nodes"});
  EXPECT_NE(table.out.find("REFUSED"), std::string::npos);
  EXPECT_NE(table.out.find("2, latest "), std::string::npos) << table.out;
  // Node 1 drops a flow; node 2 reports within the limit: merged, no
  // longer refused.
  ASSERT_TRUE(one.Call(FlowReport(1, {{1, 100, 1}})).has_value());
  // Node 3 gone for good, forgotten: node 2 takes its place.
  three.Close().IgnoreError();
  ASSERT_EQ(Ctl({addr, "forget", "--node=3"}).exit_code, 0);
  ASSERT_TRUE(report(2, {3}).first);
  const google::protobuf::Value after =
      ParseJson(Ctl({addr, "nodes", "--json"}).out);
  for (const auto& value : after.list_value().values()) {
    const auto& node = value.struct_value().fields();
    if (node.at("node_id").number_value() != 2) continue;
    EXPECT_EQ(node.count("refused"), 0u);
    EXPECT_EQ(node.at("flow_count").number_value(), 1);
  }
}

// Issue 59: one unauthenticated heartbeat whose peer.addr and hostname hold
// a newline, a forged row and escape sequences (a window title, a clear
// screen, a C1 CSI) prints as one inert row; --json stays exact.
TEST(MetasrvctlTest, NodesPrintsWhatANodeSentInertly) {
  ServerProcess server;
  const std::string addr = "--addr=" + server.addr();
  const std::string forged_addr =
      "10.0.0.1:4001\n666 10.6.6.6:4001 forged-row\x1b[2J";
  const std::string forged_host =
      "h\x1b]0;pwned\x07\xc2\x9b"
      "1m\x7f";
  meta::HeartbeatRequest req = FlowReport(5, {{1, 100, 1}});
  req.mutable_peer()->set_addr(forged_addr);
  req.mutable_info()->set_hostname(forged_host);
  HeartbeatClient client(server.channel());
  ASSERT_TRUE(client.Call(req).has_value());
  CtlRun table = Ctl({addr, "nodes"});
  ASSERT_EQ(table.exit_code, 0);
  for (char c : table.out) {
    const unsigned char b = static_cast<unsigned char>(c);
    EXPECT_TRUE(b == '\n' || (b >= 0x20 && b != 0x7f && b < 0x80))
        << "byte " << static_cast<int>(b) << " in " << table.out;
  }
  EXPECT_EQ(std::count(table.out.begin(), table.out.end(), '\n'), 2)
      << table.out;  // The header and one row: no forged row.
  EXPECT_NE(table.out.find("10.0.0.1:4001\\x0a666 10.6.6.6:4001 "
                           "forged-row\\x1b[2J"),
            std::string::npos)
      << table.out;
  EXPECT_NE(table.out.find("h\\x1b]0;pwned\\x07\\u009b1m\\x7f"),
            std::string::npos)
      << table.out;
  // JSON carries the strings exactly, escaped as JSON.
  const google::protobuf::Value list =
      ParseJson(Ctl({addr, "nodes", "--json"}).out);
  ASSERT_EQ(list.list_value().values_size(), 1);
  const auto& node = list.list_value().values(0).struct_value().fields();
  EXPECT_EQ(node.at("peer_addr").string_value(), forged_addr);
}

TEST(MetasrvctlTest, ResetSendsTheTokenFromAFile) {
  char path[] = "/tmp/metasrvctl-token-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  std::ofstream(path) << "t0ken-0123456789abcdef\n";
  ServerProcess server({absl::StrCat("--admin_token_file=", path)});
  const std::string addr = "--addr=" + server.addr();
  Report(server.channel(), 1, 7, 700);
  CtlRun refused = Ctl({addr, "reset"});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_TRUE(ParseJson(Ctl({addr, "get", "--json"}).out)
                  .struct_value()
                  .fields()
                  .at("found")
                  .bool_value());
  // No token: the hint says to pass one; a wrong one: that it was refused.
  EXPECT_NE(Ctl({addr, "reset"}, true).out.find("need the server's token"),
            std::string::npos);
  char wrong[] = "/tmp/metasrvctl-wrong-XXXXXX";
  const int wrong_fd = mkstemp(wrong);
  ASSERT_GE(wrong_fd, 0);
  close(wrong_fd);
  std::ofstream(wrong) << "not-it\n";
  CtlRun refused_token =
      Ctl({addr, "reset", absl::StrCat("--token_file=", wrong)}, true);
  EXPECT_EQ(refused_token.exit_code, 1);
  EXPECT_NE(refused_token.out.find("the server refused the token"),
            std::string::npos)
      << refused_token.out;
  unlink(wrong);
  CtlRun reset =
      Ctl({addr, "reset", absl::StrCat("--token_file=", path), "--json"});
  EXPECT_EQ(reset.exit_code, 0);
  // The report, the aggregate.
  EXPECT_TRUE(SameJson(reset.out, "{\"dropped_keys\":2}")) << reset.out;
  EXPECT_TRUE(SameJson(Ctl({addr, "get", "--json"}).out,
                       "{\"found\":false,\"flows\":[]}"));
  unlink(path);
}

TEST(MetasrvctlTest, ExitCodesAndHelp) {
  EXPECT_EQ(Ctl({}).exit_code, 2);
  EXPECT_EQ(Ctl({"bogus"}).exit_code, 2);
  EXPECT_EQ(Ctl({"get", "--nope"}).exit_code, 2);
  EXPECT_EQ(Ctl({"get", "--flow=x"}).exit_code, 2);
  EXPECT_EQ(Ctl({"watch", "--count=0"}).exit_code, 2);
  EXPECT_EQ(Ctl({"watch", "--interval=soon"}).exit_code, 2);
  EXPECT_EQ(Ctl({"watch", "--interval=-1s"}).exit_code, 2);
  EXPECT_EQ(Ctl({"--help"}).exit_code, 0);
  EXPECT_EQ(Ctl({"-h"}).exit_code, 0);
  EXPECT_EQ(Ctl({"help"}).exit_code, 0);
  // help COMMAND is COMMAND --help.
  EXPECT_EQ(Ctl({"help", "watch"}).out, Ctl({"watch", "--help"}).out);
  EXPECT_EQ(Ctl({"help", "bogus"}).exit_code, 2);
  CtlRun version = Ctl({"--version"});
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_EQ(version.out.find("metasrvctl 0.1.0 (commit "), 0u) << version.out;
  EXPECT_EQ(Ctl({"get", "stray"}).exit_code, 2);
  // Half a client certificate, or a CA file that holds none: refused, not a
  // silent plaintext connection.
  EXPECT_EQ(Ctl({"--tls_key=/etc/hostname", "leader"}).exit_code, 2);
  EXPECT_EQ(Ctl({"--tls_cert=/etc/hostname", "leader"}).exit_code, 2);
  EXPECT_EQ(Ctl({"--tls_ca=/etc/hostname", "leader"}).exit_code, 2);
  for (const char* cmd : {"get", "nodes", "leader", "peers", "reset", "forget",
                          "watch", "health"}) {
    CtlRun help = Ctl({cmd, "--help"});
    EXPECT_EQ(help.exit_code, 0) << cmd;
    EXPECT_NE(help.out.find(std::string("metasrvctl ") + cmd),
              std::string::npos);
  }
  // Nobody listens there: an error, not a usage problem.
  EXPECT_EQ(Ctl({"--addr=127.0.0.1:1", "--timeout=1s", "leader"}).exit_code, 1);
  EXPECT_EQ(Ctl({"--addr=127.0.0.1:1", "--timeout=1s", "health"}).exit_code, 1);
}

TEST(MetasrvctlTest, HealthOfAServingServer) {
  ServerProcess server;
  CtlRun health = Ctl({"--addr=" + server.addr(), "health"});
  EXPECT_EQ(health.exit_code, 0);
  EXPECT_EQ(health.out, "SERVING\n");
  EXPECT_TRUE(SameJson(Ctl({"--addr=" + server.addr(), "health", "--json"}).out,
                       "{\"status\":\"SERVING\"}"));
  EXPECT_TRUE(SameJson(Ctl({"--addr=" + server.addr(), "leader", "--json"}).out,
                       "{\"leader\":\"" + server.addr() + "\"}"));
  EXPECT_TRUE(
      SameJson(Ctl({"--addr=" + server.addr(), "peers", "--json"}).out,
               "{\"leader\":\"" + server.addr() + "\",\"followers\":[]}"));
  // The address from the environment when --addr is not given.
  ChildProcess from_env({"/usr/bin/env", "METASRVCTL_ADDR=" + server.addr(),
                         METASRVCTL_BINARY, "leader"});
  EXPECT_EQ(from_env.ReadLine().value_or(""), server.addr());
  EXPECT_EQ(from_env.Wait(absl::Seconds(20)).value_or(-1), 0);
  CtlRun unknown = Ctl({"--addr=" + server.addr(), "health", "--service=nope"});
  EXPECT_EQ(unknown.exit_code, 1);  // NOT_FOUND: no such service.
}

}  // namespace
}  // namespace metasrv::testing

namespace metasrv::testing {
namespace {

TEST(MetasrvctlTest, TopRanksLargestAndMostLaggingWithTheirNodes) {
  ServerProcess server;
  const std::string addr = "--addr=" + server.addr();
  const int64_t now = absl::ToUnixMillis(absl::Now());
  auto report =
      [&](uint64_t node,
          const std::vector<std::tuple<uint32_t, uint64_t, int64_t>>& flows) {
        HeartbeatClient client(server.channel());
        ASSERT_TRUE(client.Call(FlowReport(node, flows)).has_value());
        ASSERT_TRUE(client.Close().ok());
      };
  report(1, {{1, 100, now - 600000}, {3, 200, now - 60000}});
  report(2, {{2, 300, now}, {3, 150, now - 120000}});
  CtlRun json = Ctl({addr, "top", "--n=2", "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.out;
  google::protobuf::Value v = ParseJson(json.out);
  const auto& f = v.struct_value().fields();
  EXPECT_EQ(f.at("flows").number_value(), 3);
  EXPECT_EQ(f.at("stalled").number_value(), 1);  // Flow 1: 10 min > 5 min.
  const auto& largest = f.at("largest").list_value().values();
  ASSERT_EQ(largest.size(), 2);
  auto field = [](const google::protobuf::Value& row, const char* name) {
    return row.struct_value().fields().at(name).number_value();
  };
  EXPECT_EQ(field(largest[0], "flow_id"), 2);
  EXPECT_EQ(field(largest[0], "state_size"), 300);
  EXPECT_EQ(field(largest[0], "node"), 2);
  EXPECT_EQ(field(largest[1], "flow_id"), 3);
  EXPECT_EQ(field(largest[1], "node"), 1);  // 200 from node 1 beats 150.
  const auto& lagging = f.at("most_lagging").list_value().values();
  ASSERT_EQ(lagging.size(), 2);
  EXPECT_EQ(field(lagging[0], "flow_id"), 1);
  EXPECT_GE(field(lagging[0], "lag_seconds"), 600);
  EXPECT_LT(field(lagging[0], "lag_seconds"), 660);
  EXPECT_EQ(field(lagging[0], "last_exec_time_ms"), now - 600000);
  EXPECT_EQ(field(lagging[1], "flow_id"), 3);
  EXPECT_EQ(field(lagging[1], "node"), 1);  // Node 1's 1 min ago is the max.

  CtlRun table = Ctl({addr, "top", "--n=1"});
  EXPECT_EQ(table.exit_code, 0);
  EXPECT_NE(table.out.find("flows: 3  stalled (no execution for 5m): 1"),
            std::string::npos)
      << table.out;
  EXPECT_NE(table.out.find("2            300              2"),
            std::string::npos)
      << table.out;
  // --watch refreshes; with --json, one object per line.
  CtlRun watch = Ctl({addr, "top", "--watch", "--json", "--interval=100ms",
                      "--count=3", "--stall_after=30s"});
  EXPECT_EQ(watch.exit_code, 0);
  int lines = 0;
  for (absl::string_view line :
       absl::StrSplit(watch.out, '\n', absl::SkipEmpty())) {
    ++lines;
    google::protobuf::Value refresh = ParseJson(std::string(line));
    // Flows 1 and 3 lag more than 30 s.
    EXPECT_EQ(refresh.struct_value().fields().at("stalled").number_value(), 2);
  }
  EXPECT_EQ(lines, 3);
  EXPECT_EQ(Ctl({addr, "top", "--n=lots"}).exit_code, 2);
}

// Issue 46, items 4 and 6: a leader that advertises an address this host
// cannot use (a compose service name; or, bound to 0.0.0.0, an address
// whose calls do not come from loopback) is reached through the address
// --addr gives: reads, and admin calls without a token over loopback.
TEST(MetasrvctlTest, ALeaderIsDialledAsAddrGivesIt) {
  const int port = FreePort();
  const std::string given = absl::StrCat("127.0.0.1:", port);
  ServerProcess server(
      {"--bind_addr=" + given,
       absl::StrCat("--server_addr=metasrv-0.invalid:", port)});
  const std::string addr = "--addr=" + given;
  Report(server.channel(), 1, 7, 700);
  EXPECT_EQ(Ctl({addr, "get", "--json"}).exit_code, 0);
  EXPECT_EQ(Ctl({addr, "nodes"}).exit_code, 0);
  CtlRun reset = Ctl({addr, "reset"}, /*and_stderr=*/true);
  EXPECT_EQ(reset.exit_code, 0) << reset.out;
  EXPECT_NE(reset.out.find("2 keys dropped"), std::string::npos) << reset.out;
  // What it advertises is still what it names as leader.
  EXPECT_EQ(Ctl({addr, "leader"}).out,
            absl::StrCat("metasrv-0.invalid:", port, "\n"));
  CtlRun status = Ctl({addr, "status", "--json"});
  EXPECT_EQ(status.exit_code, 0) << status.out;
  const google::protobuf::Value rows = ParseJson(status.out);
  const auto& row = rows.list_value().values(0).struct_value().fields();
  EXPECT_EQ(row.at("role").string_value(), "standalone");
  EXPECT_EQ(row.at("store").string_value(), "-");
  EXPECT_EQ(row.at("flows").number_value(), 0);
}

// In an incident some replicas in --addr are silent (stopped, or cut off):
// here three that accept connections and never answer. All are asked at
// once, so together they cost one --timeout, not one (or two) each in turn.
TEST(MetasrvctlTest, SilentReplicasInAddrCostOneTimeoutTogether) {
  std::vector<int> silent;
  std::vector<std::string> addrs;
  for (int i = 0; i < 3; ++i) {
    int port = 0;
    silent.push_back(ListenSilently(&port));
    ASSERT_GE(silent.back(), 0);
    addrs.push_back(absl::StrCat("127.0.0.1:", port));
  }
  ServerProcess server(std::vector<std::string>{});
  Report(server.channel(), 1, 7, 700);
  addrs.push_back(server.addr());
  const absl::Time start = absl::Now();
  CtlRun get = Ctl(
      {"--addr=" + absl::StrJoin(addrs, ","), "--timeout=2s", "get", "--json"},
      /*and_stderr=*/true);
  const absl::Duration took = absl::Now() - start;
  EXPECT_EQ(get.exit_code, 0) << get.out;
  EXPECT_NE(get.out.find("\"flow_id\":7"), std::string::npos) << get.out;
  // One timeout (2 s) and the call; asked in turn, at least 6 s.
  EXPECT_LT(took, absl::Seconds(5)) << get.out;
  for (int fd : silent) close(fd);
}

}  // namespace
}  // namespace metasrv::testing
