// metasrvctl against three replicas on a real etcd: finding the leader,
// following a failover, and what it says while the store is out.
#include <google/protobuf/struct.pb.h>

#include <algorithm>
#include <csignal>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/cli/ctl_run.h"
#include "tests/server/etcd_process.h"
#include "tests/server/test_util.h"

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

// Whether `status --json` of the replicas in `all` (an --addr flag) exits 0
// within the default wait, as it does once they name a leader; the last run
// in `status`.
bool StatusOnceALeaderIsNamed(const std::string& all, CtlRun* status) {
  return WaitFor([&] {
    *status = Ctl({all, "status", "--json"});
    return status->exit_code == 0;
  });
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
  ASSERT_TRUE(StatusOnceALeaderIsNamed(all, &status)) << status.out;
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
  ASSERT_TRUE(StatusOnceALeaderIsNamed(all, &status)) << status.out;
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
