// High availability with real processes, on each store: kill -9 of the
// leader.
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/server/etcd_process.h"
#include "tests/server/store_process.h"
#include "tests/server/test_util.h"

namespace metasrv::testing {
namespace {

class HaBinaryTest : public ::testing::TestWithParam<std::string> {};

// Starts three replicas with `args` and returns the index of the one that
// leads (-1 if none did); `leader_addr` is its address.
int StartThreeAndFindTheLeader(
    const std::vector<std::string>& args,
    std::vector<std::unique_ptr<ServerProcess>>* replicas,
    std::string* leader_addr) {
  for (int i = 0; i < 3; ++i)
    replicas->push_back(std::make_unique<ServerProcess>(args));
  if (!WaitFor([&] {
        *leader_addr = AskLeader((*replicas)[0]->channel());
        return !leader_addr->empty();
      })) {
    return -1;
  }
  for (int i = 0; i < 3; ++i) {
    if ((*replicas)[i]->addr() == *leader_addr) return i;
  }
  return -1;
}

TEST_P(HaBinaryTest, KilledLeaderIsReplacedWithinTtlPlusTwoSeconds) {
  std::unique_ptr<StoreProcess> store = StartStore(GetParam());
  const std::vector<std::string> args = {"--backend=" + store->backend(),
                                         "--store_addrs=" + store->address(),
                                         "--lease_ttl=2s"};
  std::vector<std::unique_ptr<ServerProcess>> replicas;
  // A flownode finds the leader and reports there.
  std::string leader_addr;
  const int leader = StartThreeAndFindTheLeader(args, &replicas, &leader_addr);
  ASSERT_GE(leader, 0);
  {
    HeartbeatClient client(replicas[leader]->channel());
    ASSERT_TRUE(client.Call(Request(meta::FLOWNODE, 9)).has_value());
    auto resp = client.Call(FlowReport(9, {{90, 900, 9}}));
    ASSERT_TRUE(resp.has_value());
    ASSERT_FALSE(resp->header().has_error());
  }

  replicas[leader]->process().Signal(SIGKILL);
  const absl::Time killed = absl::Now();
  // The flownode follows AskLeader from any survivor and reconnects.
  std::string new_leader;
  bool reported = false;
  while (!reported && absl::Now() - killed < absl::Seconds(20)) {
    for (int i = 0; i < 3 && !reported; ++i) {
      if (i == leader) continue;
      const std::string addr = AskLeader(replicas[i]->channel());
      if (addr.empty() || addr == leader_addr) continue;
      HeartbeatClient client(Connect(addr));
      auto hs = client.Call(Request(meta::FLOWNODE, 9));
      if (!hs.has_value() || hs->header().has_error()) continue;
      auto resp = client.Call(FlowReport(9, {{90, 901, 10}}));
      if (resp.has_value() && !resp->header().has_error()) {
        reported = true;
        new_leader = addr;
      }
    }
    if (!reported) absl::SleepFor(absl::Milliseconds(20));
  }
  const absl::Duration failover = absl::Now() - killed;
  ASSERT_TRUE(reported);
  EXPECT_LE(failover, absl::Seconds(2 + 2)) << "TTL + 2 s";
  // Once a survivor accepts reports, the other never names the killed
  // leader: a follower whose known leader's lease has passed asks the store
  // (upstream's leader() refuses an expired row), and soon names the new one.
  for (int i = 0; i < 3; ++i) {
    if (i == leader || replicas[i]->addr() == new_leader) continue;
    EXPECT_NE(AskLeader(replicas[i]->channel()), leader_addr)
        << "replica " << i << " named the killed leader";
    EXPECT_TRUE(
        WaitFor([&] { return AskLeader(replicas[i]->channel()) == new_leader; },
                absl::Seconds(2)));
  }
  // Its report is there, on the new leader.
  auto state = GetFlowState(Connect(new_leader));
  ASSERT_TRUE(state.found);
  ASSERT_EQ(state.flows.size(), 1);
  EXPECT_EQ(state.flows[0].state_size, 901u);
  std::printf("failover took %s\n", absl::FormatDuration(failover).c_str());
}

// etcd with authentication and short-lived tokens, simple and JWT: idle
// followers' tokens expire; once the leader is killed, a follower must
// notice etcd's "invalid auth token" (whatever gRPC code carries it), log in
// again and lead. Before, the dead token was retried forever and the
// followers went on naming the dead leader.
class EtcdTokenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(EtcdTokenTest, FailoverOutlivesExpiredTokens) {
  EtcdProcess::Options etcd_options;
  etcd_options.root_password = "s3cret";
  if (GetParam() == "simple") {
    etcd_options.extra_args = {"--auth-token-ttl=2"};
  } else {
    etcd_options.jwt_ttl = "2s";
  }
  EtcdProcess etcd(etcd_options);
  const std::string password =
      ::testing::TempDir() + "/etcd-password-" + std::to_string(getpid());
  std::ofstream(password) << "s3cret\n";
  const std::vector<std::string> args = {
      "--store_addrs=" + etcd.address(), "--lease_ttl=2s",
      "--store_username=root", "--store_password_file=" + password};
  std::vector<std::unique_ptr<ServerProcess>> replicas;
  std::string leader_addr;
  const int leader = StartThreeAndFindTheLeader(args, &replicas, &leader_addr);
  ASSERT_GE(leader, 0);
  // Idle past the tokens' TTL (etcd's clock: a wait, not a guess).
  absl::SleepFor(absl::Seconds(4));
  replicas[leader]->process().Signal(SIGKILL);
  const absl::Time killed = absl::Now();
  std::string new_leader;
  ASSERT_TRUE(WaitFor(
      [&] {
        for (int i = 0; i < 3; ++i) {
          if (i == leader) continue;
          const std::string addr = AskLeader(replicas[i]->channel());
          if (!addr.empty() && addr != leader_addr) new_leader = addr;
        }
        return !new_leader.empty();
      },
      absl::Seconds(15)))
      << "no replica led after the kill";
  EXPECT_LE(absl::Now() - killed, absl::Seconds(2 + 4)) << "TTL + 4 s";
  // Every survivor names the new leader.
  for (int i = 0; i < 3; ++i) {
    if (i == leader) continue;
    EXPECT_TRUE(
        WaitFor([&] { return AskLeader(replicas[i]->channel()) == new_leader; },
                absl::Seconds(5)))
        << "replica " << i;
  }
  unlink(password.c_str());
}

INSTANTIATE_TEST_SUITE_P(Tokens, EtcdTokenTest,
                         ::testing::Values("simple", "jwt"));

INSTANTIATE_TEST_SUITE_P(Stores, HaBinaryTest,
                         ::testing::Values("etcd_store", "postgres_store",
                                           "mysql_store"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace metasrv::testing
