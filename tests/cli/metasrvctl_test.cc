// metasrvctl end to end, against the real server binary.
#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/message_differencer.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <fstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/server/etcd_process.h"
#include "tests/server/test_util.h"

namespace metasrv::testing {
namespace {

struct CtlRun {
  int exit_code = -1;
  std::string out;  // Its stdout.
};

// `json` parsed; fails the test if it is not JSON.
google::protobuf::Value ParseJson(const std::string& json) {
  google::protobuf::Value v;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(json, &v).ok())
      << "not JSON: " << json;
  return v;
}

// Whether two JSON texts hold the same value (object keys in any order).
::testing::AssertionResult SameJson(const std::string& got,
                                    const std::string& want) {
  if (google::protobuf::util::MessageDifferencer::Equals(ParseJson(got),
                                                         ParseJson(want))) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << got << " is not " << want;
}

// Runs metasrvctl with `args` and collects its stdout (with `and_stderr`,
// its stderr too) and exit code.
CtlRun Ctl(const std::vector<std::string>& args, bool and_stderr = false) {
  std::vector<std::string> argv = {METASRVCTL_BINARY};
  if (and_stderr) {
    argv = {"/bin/sh", "-c", "exec \"$0\" \"$@\" 2>&1", METASRVCTL_BINARY};
  }
  argv.insert(argv.end(), args.begin(), args.end());
  ChildProcess p(argv);
  CtlRun run;
  while (auto line = p.ReadLine(absl::Seconds(20))) run.out += *line + "\n";
  std::optional<int> status = p.Wait(absl::Seconds(20));
  if (status.has_value() && WIFEXITED(*status))
    run.exit_code = WEXITSTATUS(*status);
  return run;
}

void Report(const std::shared_ptr<grpc::Channel>& channel, uint64_t node,
            uint32_t flow, uint64_t size) {
  HeartbeatClient client(channel);
  ASSERT_TRUE(client.Call(FlowReport(node, {{flow, size, 77}})).has_value());
  ASSERT_TRUE(client.Close().ok());
}

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
  // Nodes 1 and 3 keep their streams open: live, they cannot be evicted.
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
  three.Close().IgnoreError();  // Node 2 may take node 3's place.
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
  CtlRun get = Ctl({"--addr=" + absl::StrJoin(addrs, ","), "--timeout=2s",
                    "get", "--json"},
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

namespace metasrv::testing {
namespace {

// Three replicas on `etcd` (TTL 2 s) into `replicas`; their addresses.
std::vector<std::string> StartReplicas(
    const EtcdProcess& etcd,
    std::vector<std::unique_ptr<ServerProcess>>* replicas) {
  std::vector<std::string> addrs;
  for (int i = 0; i < 3; ++i) {
    replicas->push_back(
        std::make_unique<ServerProcess>(std::vector<std::string>{
            "--store_addrs=" + etcd.endpoint(), "--lease_ttl=2s"}));
    addrs.push_back(replicas->back()->addr());
  }
  return addrs;
}

// Three replicas on a real etcd: with all of them in --addr, in any order,
// commands go to the leader; with the leader killed, to the next one.
TEST(MetasrvctlHaTest, FollowsTheLeaderAcrossReplicasAndAFailover) {
  EtcdProcess etcd;
  std::vector<std::unique_ptr<ServerProcess>> replicas;
  const std::vector<std::string> addrs = StartReplicas(etcd, &replicas);
  const std::string all = "--addr=" + absl::StrJoin(addrs, ",");
  std::string leader;
  ASSERT_TRUE(WaitFor([&] {
    CtlRun run = Ctl({all, "leader"});
    leader = std::string(absl::StripTrailingAsciiWhitespace(run.out));
    return run.exit_code == 0 && !leader.empty();
  }));
  const auto at = std::find(addrs.begin(), addrs.end(), leader);
  ASSERT_NE(at, addrs.end()) << leader;
  const size_t first = static_cast<size_t>(at - addrs.begin());
  // The followers first: the command still reaches the leader.
  std::vector<std::string> followers_first;
  for (size_t i = 1; i <= 3; ++i)
    followers_first.push_back(addrs[(first + i) % 3]);
  Report(replicas[first]->channel(), 1, 7, 700);
  const std::string via_followers =
      "--addr=" + absl::StrJoin(followers_first, ",");
  EXPECT_TRUE(SameJson(Ctl({via_followers, "get", "--json"}).out,
                       "{\"found\":true,\"flows\":[{\"flow_id\":7,"
                       "\"state_size\":700,\"last_exec_time_ms\":77}]}"));
  // A follower alone works too: it names the leader.
  EXPECT_EQ(Ctl({"--addr=" + followers_first[0], "nodes"}).exit_code, 0);
  // health asks the replica named, not the leader.
  EXPECT_EQ(Ctl({"--addr=" + followers_first[0], "health"}).out, "SERVING\n");

  // Issue 38, item 8: with several replicas, health (and status) shows one
  // row per replica, as etcdctl endpoint status does.
  // Versions come from the leader's list of peers, which each replica
  // joins at its first keep-alive: wait until every row has one.
  CtlRun status;
  EXPECT_TRUE(WaitFor([&] {
    status = Ctl({all, "status", "--json"});
    return status.exit_code == 0 &&
           status.out.find("\"version\":\"-\"") == std::string::npos;
  })) << status.out;
  const google::protobuf::Value rows = ParseJson(status.out);
  ASSERT_EQ(rows.list_value().values_size(), 3) << status.out;
  int leaders = 0;
  for (int i = 0; i < 3; ++i) {
    const auto& row = rows.list_value().values(i).struct_value().fields();
    EXPECT_EQ(row.at("addr").string_value(), addrs[i]);
    EXPECT_EQ(row.at("health").string_value(), "SERVING");
    EXPECT_EQ(row.at("leader").string_value(), leader) << status.out;
    EXPECT_EQ(row.at("version").string_value(), "0.1.0") << status.out;
    if (i == static_cast<int>(first)) {
      ++leaders;
      EXPECT_EQ(row.at("role").string_value(), "leader");
      EXPECT_EQ(row.at("nodes").number_value(), 1);
      EXPECT_EQ(row.at("flows").number_value(), 1);
    } else {
      EXPECT_EQ(row.at("role").string_value(), "follower");
      EXPECT_EQ(row.count("nodes"), 0u);
    }
  }
  EXPECT_EQ(leaders, 1);
  CtlRun health = Ctl({all, "health"});
  EXPECT_EQ(health.exit_code, 0);
  EXPECT_EQ(std::count(health.out.begin(), health.out.end(), '\n'), 4)
      << health.out;  // A header and a row per replica.
  EXPECT_NE(health.out.find(addrs[first] + " "), std::string::npos);
  // One replica down: its row says so; the command still succeeds.
  const std::string down = absl::StrCat("127.0.0.1:", FreePort());
  CtlRun partial = Ctl({all + "," + down, "status"});
  EXPECT_EQ(partial.exit_code, 0) << partial.out;
  EXPECT_NE(partial.out.find(down), std::string::npos);
  EXPECT_NE(partial.out.find("UNREACHABLE"), std::string::npos) << partial.out;
  // None answering: exit 1.
  EXPECT_EQ(
      Ctl({"--addr=" + down + "," + down, "--timeout=1s", "status"}).exit_code,
      1);

  // A watch and a top --watch run across the failover (issue 46): they
  // follow the new leader instead of exiting.
  ChildProcess watch({METASRVCTL_BINARY, all, "watch", "--json"});
  std::optional<std::string> line = watch.ReadLine(absl::Seconds(10));
  ASSERT_TRUE(line.has_value());
  EXPECT_NE(line->find("\"flow_id\":7"), std::string::npos) << *line;
  ChildProcess top(
      {METASRVCTL_BINARY, all, "top", "--watch", "--json", "--interval=200ms"});
  ASSERT_TRUE(top.ReadLine(absl::Seconds(10)).has_value());

  replicas[first]->process().Signal(SIGKILL);
  replicas[first]->process().Wait(absl::Seconds(5));
  std::string next;
  ASSERT_TRUE(WaitFor(
      [&] {
        CtlRun run = Ctl({all, "leader"});
        next = std::string(absl::StripTrailingAsciiWhitespace(run.out));
        return run.exit_code == 0 && !next.empty() && next != leader;
      },
      absl::Seconds(20)));
  EXPECT_EQ(Ctl({all, "nodes", "--json"}).exit_code, 0);
  const auto next_at = std::find(addrs.begin(), addrs.end(), next);
  ASSERT_NE(next_at, addrs.end()) << next;
  Report(replicas[next_at - addrs.begin()]->channel(), 2, 9, 900);
  // The watch says the state was reset, then shows the new leader's flow.
  bool reset = false, flow_nine = false;
  while (!flow_nine) {
    line = watch.ReadLine(absl::Seconds(20));
    if (!line.has_value()) break;
    reset = reset || line->find("\"event\":\"reset\"") != std::string::npos;
    flow_nine = line->find("\"flow_id\":9") != std::string::npos;
  }
  EXPECT_TRUE(reset);
  EXPECT_TRUE(flow_nine);
  // top --watch goes on refreshing from the new leader: still running,
  // and its refreshes count the new flow.
  bool top_sees_nine = false;
  for (int i = 0; i < 100 && !top_sees_nine; ++i) {
    line = top.ReadLine(absl::Seconds(20));
    if (!line.has_value()) break;
    top_sees_nine = line->find("\"flow_id\":9") != std::string::npos;
  }
  EXPECT_TRUE(top_sees_nine);
  watch.Signal(SIGTERM);
  top.Signal(SIGTERM);
  watch.Wait(absl::Seconds(5));
  top.Wait(absl::Seconds(5));
}

// Issue 46, item 6: replicas that advertise names only their own network
// resolves (compose's metasrv-N:3002), used from the host through the
// addresses it reaches them by.
TEST(MetasrvctlHaTest, ReplicasAdvertisingNamesThisHostCannotResolve) {
  EtcdProcess etcd;
  std::vector<std::unique_ptr<ServerProcess>> replicas;
  std::vector<std::string> addrs;
  for (int i = 0; i < 3; ++i) {
    const int port = FreePort();
    addrs.push_back(absl::StrCat("127.0.0.1:", port));
    replicas.push_back(std::make_unique<ServerProcess>(std::vector<std::string>{
        "--bind_addr=" + addrs.back(),
        absl::StrCat("--server_addr=metasrv-", i, ".invalid:", port),
        "--store_addrs=" + etcd.endpoint(), "--lease_ttl=2s"}));
  }
  const std::string all = "--addr=" + absl::StrJoin(addrs, ",");
  CtlRun status;
  ASSERT_TRUE(WaitFor([&] {
    status = Ctl({all, "status", "--json"});
    return status.exit_code == 0;
  })) << status.out;
  int leader = -1;
  const google::protobuf::Value rows = ParseJson(status.out);
  for (int i = 0; i < rows.list_value().values_size(); ++i) {
    const auto& row = rows.list_value().values(i).struct_value().fields();
    if (row.at("role").string_value() == "leader") leader = i;
  }
  ASSERT_GE(leader, 0) << status.out;
  Report(replicas[leader]->channel(), 1, 7, 700);
  // Every replica named: the command reaches the leader as --addr gives it.
  CtlRun got = Ctl({all, "get", "--json"}, /*and_stderr=*/true);
  EXPECT_EQ(got.exit_code, 0) << got.out;
  EXPECT_NE(got.out.find("\"flow_id\":7"), std::string::npos) << got.out;
  // A follower alone: its leader's name does not resolve here, and the
  // error says what to do.
  const std::string follower = "--addr=" + addrs[(leader + 1) % 3];
  CtlRun alone = Ctl({follower, "get"}, /*and_stderr=*/true);
  EXPECT_EQ(alone.exit_code, 1);
  EXPECT_NE(alone.out.find("name every replica in --addr"), std::string::npos)
      << alone.out;
  // (An admin call too; last: it hands leadership over.)
  CtlRun reset = Ctl({all, "reset"}, /*and_stderr=*/true);
  EXPECT_EQ(reset.exit_code, 0) << reset.out;
}

// Issue 46, item 3: with the store paused, status says that no replica
// names a leader and why, and exits 1; leader says so in words; both are
// right again once the store is back.
TEST(MetasrvctlHaTest, DuringAStoreOutageStatusAndLeaderSayWhy) {
  EtcdProcess etcd;
  std::vector<std::unique_ptr<ServerProcess>> replicas;
  const std::vector<std::string> addrs = StartReplicas(etcd, &replicas);
  const std::string all = "--addr=" + absl::StrJoin(addrs, ",");
  CtlRun status;
  ASSERT_TRUE(WaitFor([&] {
    status = Ctl({all, "status", "--json"});
    return status.exit_code == 0;
  })) << status.out;
  const google::protobuf::Value healthy = ParseJson(status.out);
  for (const auto& value : healthy.list_value().values()) {
    EXPECT_EQ(value.struct_value().fields().at("store").string_value(), "ok");
  }
  etcd.Pause();
  EXPECT_TRUE(WaitFor(
      [&] {
        status = Ctl({all, "status"}, /*and_stderr=*/true);
        return status.exit_code == 1 &&
               status.out.find("no replica names a leader") !=
                   std::string::npos;
      },
      absl::Seconds(15)))
      << status.out;
  // Every replica says why: the store, named, unreachable.
  EXPECT_TRUE(WaitFor([&] {
    status = Ctl({all, "status", "--json"});
    int down = 0;
    const google::protobuf::Value rows = ParseJson(status.out);
    for (const auto& value : rows.list_value().values()) {
      const auto& row = value.struct_value().fields();
      down += row.count("no_leader_reason") == 1 &&
              absl::StartsWith(row.at("store").string_value(), "down ") &&
              absl::StartsWith(row.at("no_leader_reason").string_value(),
                               "the store (etcd_store) has been unreachable");
    }
    return status.exit_code == 1 && down == 3;
  })) << status.out;
  CtlRun leader = Ctl({all, "leader"}, /*and_stderr=*/true);
  EXPECT_EQ(leader.exit_code, 1);
  EXPECT_NE(leader.out.find("metasrvctl leader: no leader is known: the store "
                            "(etcd_store) has been unreachable for"),
            std::string::npos)
      << leader.out;
  EXPECT_EQ(leader.out.find("Internal error"), std::string::npos) << leader.out;
  etcd.Resume();
  EXPECT_TRUE(WaitFor(
      [&] {
        status = Ctl({all, "status"}, /*and_stderr=*/true);
        return status.exit_code == 0;
      },
      absl::Seconds(30)))
      << status.out;
  EXPECT_EQ(Ctl({all, "leader"}).exit_code, 0);
}

}  // namespace
}  // namespace metasrv::testing
