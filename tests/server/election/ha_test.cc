// High availability against each real store (etcd, PostgreSQL, MariaDB):
// three in-process replicas.
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <set>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/clock.h"
#include "gtest/gtest.h"
#include "server/election/etcd_client.h"
#include "server/metasrv_server.h"
#include "server/ops/log_limit.h"
#include "server/services/heartbeat_handler.h"
#include "tests/server/election/accept_history.h"
#include "tests/server/etcd_process.h"
#include "tests/server/in_process_server.h"
#include "tests/server/store_process.h"
#include "tests/server/test_util.h"
#include "tests/server/watch_client.h"

namespace metasrv::server {
namespace {

using ::metasrv::testing::Connect;
using ::metasrv::testing::CountInterleavedAccepts;
using ::metasrv::testing::FlowReport;
using ::metasrv::testing::GetFlowState;
using ::metasrv::testing::HeartbeatClient;
using ::metasrv::testing::MoveWindow;
using ::metasrv::testing::ProbedAccept;
using ::metasrv::testing::Request;
using ::metasrv::testing::StoreProcess;
using ::metasrv::testing::WaitFor;
using ::metasrv::testing::WatchClient;
namespace meta = greptime::v1::meta;

constexpr absl::Duration kTtl = absl::Seconds(2);

// One store per backend serves every test of the suite; each test has its
// own key prefix, so no test sees another's rows.
class HaTest : public ::testing::TestWithParam<std::string> {
 protected:
  static std::map<std::string, std::unique_ptr<StoreProcess>>& Stores() {
    static auto* stores =
        new std::map<std::string, std::unique_ptr<StoreProcess>>();
    return *stores;
  }
  static void TearDownTestSuite() { Stores().clear(); }

  void SetUp() override {
    std::unique_ptr<StoreProcess>& store = Stores()[GetParam()];
    if (store == nullptr) store = ::metasrv::testing::StartStore(GetParam());
    store_ = store.get();
    static int test_number = 0;
    const std::string prefix = absl::StrCat("test", ++test_number, "/");
    for (int i = 0; i < 3; ++i) {
      ServerOptions options = ::metasrv::testing::LoopbackOptions();
      options.backend = store_->backend();
      options.store_addrs = {store_->address()};
      options.election_name = prefix + "__metasrv_election";
      options.lease_ttl = kTtl;
      options.metrics_addr = "127.0.0.1:0";
      replicas_.push_back(::metasrv::testing::StartInProcess(options));
      ASSERT_NE(replicas_.back(), nullptr);
      channels_.push_back(Connect(replicas_.back()->advertised_addr()));
    }
  }

  void TearDown() override {
    // Stop replicas first, so that they hand over their rows.
    replicas_.clear();
  }

  // Indices of the replicas that lead now.
  std::vector<int> Leaders() {
    std::vector<int> out;
    for (int i = 0; i < static_cast<int>(replicas_.size()); ++i) {
      if (replicas_[i] != nullptr &&
          replicas_[i]->leadership().IsLeader()) {
        out.push_back(i);
      }
    }
    return out;
  }

  // Waits until exactly one replica leads (other than `not_this`); -1 if none.
  int WaitForOneLeader(absl::Duration timeout = absl::Seconds(20),
                       int not_this = -1) {
    int leader = -1;
    WaitFor(
        [&] {
          std::vector<int> leaders = Leaders();
          leader =
              leaders.size() == 1 && leaders[0] != not_this ? leaders[0] : -1;
          return leader >= 0;
        },
        timeout);
    return leader;
  }

  std::string AskLeader(int i) {
    return ::metasrv::testing::AskLeader(channels_[i]);
  }

  // On etcd a leader refuses to hand over to a next in line that has not
  // renewed its lease lately (EtcdHandoverTest); on a loaded machine a
  // keep-alive can be that late, so a refusal so worded is asked again.
  grpc::Status LeaderChange(int i, metasrv::v1::LeaderChangeResponse* resp) {
    auto stub = metasrv::v1::Admin::NewStub(channels_[i]);
    const absl::Time deadline = absl::Now() + absl::Seconds(10);
    while (true) {
      grpc::ClientContext ctx;
      grpc::Status status = stub->LeaderChange(&ctx, {}, resp);
      if (status.error_message().find("not handing over") ==
              std::string::npos ||
          absl::Now() > deadline) {
        return status;
      }
      absl::SleepFor(absl::Milliseconds(100));
    }
  }

  // Sends one report on a fresh stream; true if the replica accepted it.
  bool Report(int i, uint64_t node, uint32_t flow, uint64_t size) {
    HeartbeatClient client(channels_[i]);
    auto resp = client.Call(FlowReport(node, {{flow, size, 1}}));
    const bool accepted = resp.has_value() && !resp->header().has_error();
    client.Close().IgnoreError();
    return accepted;
  }

  StoreProcess* store_ = nullptr;  // The suite's store; in Stores().
  std::vector<std::unique_ptr<MetasrvServer>> replicas_;
  std::vector<std::shared_ptr<grpc::Channel>> channels_;
};

TEST_P(HaTest, ThreeReplicasElectExactlyOneLeaderOthersAnswerAsFollowers) {
  const int leader = WaitForOneLeader();
  ASSERT_GE(leader, 0);
  const std::string leader_addr = replicas_[leader]->advertised_addr();
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(WaitFor([&] { return AskLeader(i) == leader_addr; })) << i;
  }
  EXPECT_EQ(Leaders().size(), 1u);

  for (int f = 0; f < 3; ++f) {
    if (f == leader) continue;
    // Heartbeat: error code 2 in the response, then ABORTED. The handshake
    // answer carries the config all the same, as the reference's does.
    HeartbeatClient client(channels_[f]);
    auto resp = client.Call(FlowReport(7, {{1, 1, 1}}));
    ASSERT_TRUE(resp.has_value());
    EXPECT_EQ(resp->header().error().code(), core::kNotLeaderErrorCode);
    EXPECT_EQ(resp->heartbeat_config().heartbeat_interval_ms(), 3000u);
    EXPECT_EQ(resp->heartbeat_config().retry_interval_ms(), 3000u);
    EXPECT_EQ(client.Close().error_code(), grpc::StatusCode::ABORTED);
    EXPECT_EQ(replicas_[f]->flow_state().size(), 0u);
    // Cluster reads: error code 2 in the header, no data.
    auto cluster = meta::Cluster::NewStub(channels_[f]);
    grpc::ClientContext ctx;
    meta::RangeRequest range;
    range.mutable_header();
    range.set_key("__flow/state");
    meta::RangeResponse range_resp;
    ASSERT_TRUE(cluster->Range(&ctx, range, &range_resp).ok());
    EXPECT_EQ(range_resp.header().error().code(), core::kNotLeaderErrorCode);
    EXPECT_EQ(range_resp.kvs_size(), 0);
    grpc::ClientContext peers_ctx;
    meta::MetasrvPeersResponse peers_resp;
    ASSERT_TRUE(
        cluster
            ->MetasrvPeers(&peers_ctx, meta::MetasrvPeersRequest(), &peers_resp)
            .ok());
    EXPECT_EQ(peers_resp.header().error().code(), core::kNotLeaderErrorCode);
    EXPECT_FALSE(peers_resp.has_leader());
    EXPECT_EQ(peers_resp.followers_size(), 0);
    // Our own RPCs: FAILED_PRECONDITION naming the leader.
    auto state = metasrv::v1::FlowState::NewStub(channels_[f]);
    grpc::ClientContext ctx2;
    metasrv::v1::GetFlowStateResponse state_resp;
    grpc::Status s = state->GetFlowState(&ctx2, {}, &state_resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
    EXPECT_NE(s.error_message().find(leader_addr), std::string::npos)
        << s.error_message();
    metasrv::v1::LeaderChangeResponse change;
    EXPECT_EQ(LeaderChange(f, &change).error_code(),
              grpc::StatusCode::FAILED_PRECONDITION);
  }

  // MetasrvPeers: the leader and both followers (on a SQL store, once every
  // candidate's row was read: within a round, TTL/3).
  auto cluster = meta::Cluster::NewStub(channels_[leader]);
  std::set<std::string> followers, want;
  for (int i = 0; i < 3; ++i) {
    if (i != leader) want.insert(replicas_[i]->advertised_addr());
  }
  meta::MetasrvPeersResponse peers;
  EXPECT_TRUE(WaitFor(
      [&] {
        grpc::ClientContext ctx;
        meta::MetasrvPeersRequest req;
        req.mutable_header();
        peers.Clear();
        if (!cluster->MetasrvPeers(&ctx, req, &peers).ok()) return false;
        followers.clear();
        for (const auto& f : peers.followers())
          followers.insert(f.peer().addr());
        return followers == want;
      },
      kTtl));
  EXPECT_EQ(peers.leader().peer().addr(), leader_addr);
  EXPECT_EQ(followers, want);
  // Every peer's info filled as upstream's: build and resources, the
  // followers' as they registered it in the store.
  std::vector<meta::MetasrvNodeInfo> all(peers.followers().begin(),
                                         peers.followers().end());
  all.push_back(peers.leader());
  for (const meta::MetasrvNodeInfo& node : all) {
    const meta::NodeInfo& info = node.info();
    EXPECT_FALSE(info.version().empty()) << node.peer().addr();
    EXPECT_FALSE(info.git_commit().empty()) << node.peer().addr();
    EXPECT_FALSE(info.hostname().empty()) << node.peer().addr();
    EXPECT_GT(info.start_time_ms(), 0u) << node.peer().addr();
    EXPECT_GT(info.total_cpu_millicores(), 0) << node.peer().addr();
    EXPECT_GT(info.total_memory_bytes(), 0) << node.peer().addr();
    EXPECT_GT(info.memory_usage_bytes(), 0) << node.peer().addr();
  }
}

// Reads never wait for the store: MetasrvPeers made a synchronous etcd call
// per request (a paused etcd stalled every read for its whole deadline).
// With the store paused for half a TTL, the leader's peers and small reads
// answer at once.
// The lease is timed on the server's clock: a manual one moved past the
// lease makes the leader stop acting at once, until a renewal sent at the
// new time is confirmed.
// GreptimeDB's /admin/leader on the HTTP port names the leader, as text, on
// every replica; /admin/health says OK.
TEST_P(HaTest, GreptimeDbsAdminLeaderNamesTheLeaderOnEveryReplica) {
  const int leader = WaitForOneLeader();
  ASSERT_GE(leader, 0);
  const std::string leader_addr = replicas_[leader]->advertised_addr();
  for (int i = 0; i < 3; ++i) {
    const int port = replicas_[i]->metrics_port();
    EXPECT_TRUE(WaitFor([&] {
      auto answer = ::metasrv::testing::HttpGet(port, "/admin/leader");
      return answer.status == 200 && answer.body == leader_addr;
    })) << i;
    auto health = ::metasrv::testing::HttpGet(port, "/admin/health");
    EXPECT_EQ(health.status, 200);
    EXPECT_EQ(health.body, "OK\n");
  }
}

TEST_P(HaTest, TheLeaseIsTimedOnTheServersClock) {
  replicas_.clear();
  core::ManualClock clock;
  ServerOptions options = ::metasrv::testing::LoopbackOptions();
  options.backend = store_->backend();
  options.store_addrs = {store_->address()};
  options.election_name = "manual-clock/__metasrv_election";
  options.lease_ttl = kTtl;
  options.clock = &clock;
  std::unique_ptr<MetasrvServer> replica =
      ::metasrv::testing::StartInProcess(options);
  ASSERT_NE(replica, nullptr);
  const core::Leadership& leadership = replica->leadership();
  ASSERT_TRUE(WaitFor([&] { return leadership.CurrentTerm().leading; },
                      absl::Seconds(20)));
  clock.Advance(kTtl);
  EXPECT_TRUE(WaitFor([&] { return !leadership.CurrentTerm().leading; },
                      absl::Seconds(5)));
  EXPECT_TRUE(WaitFor([&] { return leadership.CurrentTerm().leading; },
                      absl::Seconds(20)));
}

// With an election, GreptimeDB's node_max_idle_time runs on the leader, as
// upstream registers its node expiry listener (src/meta-srv/src/metasrv.rs):
// an idle node's cluster info goes, its flow state stays. (Standalone, it
// never runs: FlownodesTest's NoTtlTest.)
TEST_P(HaTest, NodeMaxIdleTimeRunsWithAnElection) {
  replicas_.clear();
  channels_.clear();
  ServerOptions options = ::metasrv::testing::LoopbackOptions();
  options.backend = store_->backend();
  options.store_addrs = {store_->address()};
  options.election_name = "idle/__metasrv_election";
  options.lease_ttl = kTtl;
  options.flow_state.node_max_idle_time = absl::Seconds(1);
  std::unique_ptr<MetasrvServer> replica =
      ::metasrv::testing::StartInProcess(options);
  ASSERT_NE(replica, nullptr);
  ASSERT_TRUE(WaitFor([&] { return replica->leadership().IsLeader(); },
                      absl::Seconds(20)));
  auto channel = Connect(replica->advertised_addr());
  HeartbeatClient client(channel);
  meta::HeartbeatRequest req = FlowReport(7, {{1, 100, 10}});
  req.mutable_peer()->set_id(7);
  req.mutable_peer()->set_addr("10.0.0.7:6800");
  req.mutable_info()->set_version("v0.15.0");
  ASSERT_TRUE(client.Call(req).has_value());
  client.Close().IgnoreError();
  const std::string key = "__meta_cluster_node_info-0-2-7";
  EXPECT_TRUE(::metasrv::testing::RangeGet(channel, key).has_value());
  EXPECT_TRUE(WaitFor(
      [&] { return !::metasrv::testing::RangeGet(channel, key).has_value(); },
      absl::Seconds(10)));
  EXPECT_TRUE(
      ::metasrv::testing::RangeGet(channel, "__flow/state/node/7").has_value());
}

// A follower's refusal of a flownode is logged as a refusal, not as a
// connection; the leader logs the connection.
TEST_P(HaTest, AFollowerLogsARefusedFlownodeAsRefused) {
  const int leader = WaitForOneLeader();
  ASSERT_GE(leader, 0);
  const int follower = (leader + 1) % 3;
  ::metasrv::testing::CapturedLog log;
  SetLogLineInterval(absl::ZeroDuration());
  EXPECT_FALSE(Report(follower, 91, 1, 10));
  EXPECT_TRUE(Report(leader, 92, 1, 10));
  SetLogLineInterval(absl::Seconds(10));
  const std::string text = log.Restore();
  EXPECT_NE(text.find("flownode 91 from"), std::string::npos) << text;
  EXPECT_NE(text.find("refused: this replica does not lead"), std::string::npos)
      << text;
  EXPECT_EQ(text.find("flownode 91 connected"), std::string::npos) << text;
  EXPECT_NE(text.find("flownode 92 connected"), std::string::npos) << text;
}

TEST_P(HaTest, ReadsNeverWaitForTheStore) {
  const int leader = WaitForOneLeader();
  ASSERT_GE(leader, 0);
  ASSERT_TRUE(Report(leader, 1, 10, 100));
  auto cluster = meta::Cluster::NewStub(channels_[leader]);
  auto state = metasrv::v1::FlowState::NewStub(channels_[leader]);
  store_->Pause();
  const absl::Time paused = absl::Now();
  absl::Duration slowest = absl::ZeroDuration();
  int reads = 0;
  while (absl::Now() - paused < kTtl / 2) {
    const absl::Time start = absl::Now();
    grpc::ClientContext peers_ctx;
    meta::MetasrvPeersResponse peers;
    ASSERT_TRUE(
        cluster->MetasrvPeers(&peers_ctx, meta::MetasrvPeersRequest(), &peers)
            .ok());
    EXPECT_FALSE(peers.header().has_error());
    grpc::ClientContext state_ctx;
    metasrv::v1::GetFlowStateRequest one;
    one.add_flow_ids(10);
    metasrv::v1::GetFlowStateResponse got;
    ASSERT_TRUE(state->GetFlowState(&state_ctx, one, &got).ok());
    EXPECT_EQ(got.flow_ids_size(), 1);
    slowest = std::max(slowest, absl::Now() - start);
    ++reads;
  }
  store_->Resume();
  EXPECT_GT(reads, 10);
  EXPECT_LT(slowest, absl::Milliseconds(250)) << reads << " reads";
}

TEST_P(HaTest, LeaderChangeHandsOverAndClearsTheOldLeadersState) {
  const int old_leader = WaitForOneLeader();
  ASSERT_GE(old_leader, 0);
  ASSERT_TRUE(Report(old_leader, 1, 10, 100));
  ASSERT_TRUE(Report(old_leader, 2, 20, 200));
  // Two reports, the aggregate.
  EXPECT_EQ(replicas_[old_leader]->flow_state().size(), 3u);
  metasrv::v1::LeaderChangeResponse resp;
  ASSERT_TRUE(LeaderChange(old_leader, &resp).ok());
  EXPECT_EQ(resp.dropped_keys(), 3u);
  // The old leader stepped down and holds nothing.
  EXPECT_FALSE(replicas_[old_leader]->leadership().IsLeader());
  EXPECT_EQ(replicas_[old_leader]->flow_state().size(), 0u);
  EXPECT_FALSE(Report(old_leader, 1, 10, 100));
  // Another replica took over, starting empty; reports work there.
  const int new_leader = WaitForOneLeader(absl::Seconds(10), old_leader);
  ASSERT_GE(new_leader, 0);
  EXPECT_FALSE(GetFlowState(channels_[new_leader]).found);
  ASSERT_TRUE(Report(new_leader, 1, 11, 111));
  auto state = GetFlowState(channels_[new_leader]);
  ASSERT_EQ(state.flows.size(), 1);
  EXPECT_EQ(state.flows[0].flow_id, 11u);
  EXPECT_EQ(replicas_[old_leader]->flow_state().size(), 0u);
}

TEST_P(HaTest, LeaderStreamsEndWithAbortedWhenItStepsDown) {
  const int leader = WaitForOneLeader();
  ASSERT_GE(leader, 0);
  HeartbeatClient client(channels_[leader]);
  ASSERT_TRUE(client.Call(Request(meta::FLOWNODE, 1)).has_value());
  metasrv::v1::LeaderChangeResponse resp;
  ASSERT_TRUE(LeaderChange(leader, &resp).ok());
  EXPECT_FALSE(client.Call(Request(meta::FLOWNODE, 1)).has_value());
  EXPECT_EQ(client.Close().error_code(), grpc::StatusCode::ABORTED);
}

TEST_P(HaTest, WatchersOfTheLeaderEndWithAbortedFollowersRefuseThem) {
  const int leader = WaitForOneLeader();
  ASSERT_GE(leader, 0);
  const int follower = (leader + 1) % 3;
  auto follower_stub = metasrv::v1::FlowState::NewStub(channels_[follower]);
  WatchClient refused(follower_stub.get());
  ASSERT_TRUE(refused.WaitDone());
  EXPECT_EQ(refused.status()->error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_TRUE(refused.messages().empty());
  auto leader_stub = metasrv::v1::FlowState::NewStub(channels_[leader]);
  WatchClient watcher(leader_stub.get());
  ASSERT_TRUE(watcher.WaitFor(
      [](const std::vector<metasrv::v1::WatchFlowStateResponse>& m) {
        return !m.empty();
      }));
  metasrv::v1::LeaderChangeResponse resp;
  ASSERT_TRUE(LeaderChange(leader, &resp).ok());
  ASSERT_TRUE(watcher.WaitDone());
  EXPECT_EQ(watcher.status()->error_code(), grpc::StatusCode::ABORTED);
  EXPECT_TRUE(WaitFor(
      [&] { return replicas_[leader]->watch().watchers() == 0u; }));
}

TEST_P(HaTest, StoreStoppedLeaderStepsDownWithinTtlAndALeaderReturns) {
  const int leader = WaitForOneLeader();
  ASSERT_GE(leader, 0);
  ASSERT_TRUE(Report(leader, 1, 10, 100));
  const absl::Time stopped = absl::Now();
  store_->Stop();
  ASSERT_TRUE(WaitFor([&] { return Leaders().empty(); }, kTtl));
  const absl::Duration step_down = absl::Now() - stopped;
  EXPECT_LE(step_down, kTtl);
  EXPECT_FALSE(Report(leader, 1, 10, 100));
  // It stops acting at 2/3 TTL; it resets once its lease could be gone in
  // the store (on etcd 0.95 TTL after its last keep-alive: issue 67).
  EXPECT_TRUE(WaitFor(
      [&] { return replicas_[leader]->flow_state().size() == 0; },
      kTtl));
  EXPECT_LE(absl::Now() - stopped, kTtl + absl::Milliseconds(500));
  store_->Start();
  EXPECT_GE(WaitForOneLeader(absl::Seconds(20)), 0);
}

// Issue 38, item 2: with the store paused (SIGSTOP) for longer than the
// TTL, no replica names a leader: the leader has stepped down, and the
// followers, out of touch with the store, cannot know of another. AskLeader
// fails, /ready is 503 and metasrv_has_leader is 0 on every replica, for as
// long as the outage lasts; once the store is back, a leader is named again.
TEST_P(HaTest, WithTheStorePausedPastTheTtlNoReplicaNamesALeader) {
  const int leader = WaitForOneLeader();
  ASSERT_GE(leader, 0);
  const std::string leader_addr = replicas_[leader]->advertised_addr();
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(WaitFor([&] { return AskLeader(i) == leader_addr; })) << i;
  }
  store_->Pause();
  const absl::Time paused = absl::Now();
  auto names_none = [&](int i) {
    return AskLeader(i).empty() &&
           ::metasrv::testing::HttpGet(replicas_[i]->metrics_port(), "/ready")
                   .status == 503 &&
           ::metasrv::testing::ScrapeMetrics(replicas_[i]->metrics_port())
                   .at("metasrv_has_leader") == 0;
  };
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(WaitFor([&] { return names_none(i); }, 2 * kTtl)) << i;
  }
  EXPECT_LE(absl::Now() - paused, 2 * kTtl + absl::Seconds(3));
  // And it stays so while the store is out (three more TTLs).
  const absl::Time until = absl::Now() + 3 * kTtl;
  while (absl::Now() < until) {
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(names_none(i)) << i;
  }
  store_->Resume();
  const int next = WaitForOneLeader(absl::Seconds(20));
  ASSERT_GE(next, 0);
  const std::string next_addr = replicas_[next]->advertised_addr();
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(WaitFor([&] { return AskLeader(i) == next_addr; })) << i;
  }
}

// A prober sends heartbeats to every replica all along, while leadership
// moves around; no replica may accept while another leads. From outside, an
// accept is only known to fall in its request's span, and a late answer
// stretches that span, so what is checked is what proves two leaders: an
// accept between two of another replica's with fewer than two moves around
// them (accept_history.h).
TEST_P(HaTest, ProberNeverSeesTwoLeadersAcceptAtOnce) {
  std::mutex mu;
  std::vector<ProbedAccept> accepted;
  std::atomic<bool> stop{false};
  std::vector<std::thread> probers;
  for (int r = 0; r < 3; ++r) {
    probers.emplace_back([&, r] {
      const absl::Time end = absl::Now() + absl::Seconds(120);  // Bounded.
      uint64_t n = 0;
      while (!stop.load() && absl::Now() < end) {
        HeartbeatClient client(channels_[r]);
        const absl::Time sent = absl::Now();
        auto resp = client.Call(FlowReport(100 + r, {{1, ++n, 1}}));
        const absl::Time answered = absl::Now();
        if (resp.has_value() && !resp->header().has_error()) {
          std::lock_guard<std::mutex> lock(mu);
          accepted.push_back({sent, answered, r});
        }
        client.Close().IgnoreError();
      }
    });
  }
  // The first leader is elected at some point before it is seen.
  std::vector<MoveWindow> moves = {{absl::InfinitePast(), absl::Now()}};
  int leader = WaitForOneLeader();
  moves.back().end = absl::Now();
  ASSERT_GE(leader, 0);
  int changes = 0;
  for (int round = 0; round < 20; ++round) {
    metasrv::v1::LeaderChangeResponse resp;
    moves.push_back({absl::Now(), absl::Now()});
    ASSERT_TRUE(LeaderChange(leader, &resp).ok());
    leader = WaitForOneLeader(absl::Seconds(10), leader);
    moves.back().end = absl::Now();
    ASSERT_GE(leader, 0) << "round " << round;
    ++changes;
    absl::SleepFor(absl::Milliseconds(200));  // Let the probers see it lead.
  }
  // And one failover through the store itself: paused (SIGSTOP) past the
  // TTL, the leader steps down; nobody leads until it is back.
  moves.push_back({absl::Now(), absl::Now()});
  store_->Pause();
  EXPECT_TRUE(
      WaitFor([&] { return Leaders().empty(); }, kTtl + absl::Seconds(1)));
  absl::SleepFor(kTtl);  // Past the TTL: probers see that nobody accepts.
  EXPECT_TRUE(Leaders().empty());
  store_->Resume();
  EXPECT_GE(WaitForOneLeader(absl::Seconds(20)), 0);
  moves.back().end = absl::Now();
  absl::SleepFor(absl::Milliseconds(200));
  stop = true;
  for (auto& t : probers) t.join();

  std::set<int> acceptors;
  for (const ProbedAccept& a : accepted) acceptors.insert(a.replica);
  EXPECT_EQ(CountInterleavedAccepts(accepted, moves), 0);
  EXPECT_EQ(changes, 20);
  EXPECT_GE(acceptors.size(), 2u) << "leadership never moved";
  EXPECT_GT(accepted.size(), 20u);
}

// Step-down under load: streams that report as fast as they can, while the
// leader changes. Every answer on a stream that outlives its leader's term is
// the longer not-leader one (it carries err_msg); a reused answer buffer made
// the leader abort here (gRPC's "!byte_buffer->Valid()" assertion). The test
// passes if no replica dies, every stream ends ABORTED with a not-leader
// answer or is still being answered, and a leader takes reports afterwards.
TEST_P(HaTest, StepDownUnderLoadNeverCrashes) {
  int leader = WaitForOneLeader();
  ASSERT_GE(leader, 0);
  std::atomic<bool> stop{false};
  std::atomic<int64_t> answered{0}, not_leader{0}, aborted{0}, other{0};
  std::vector<std::thread> senders;
  for (int t = 0; t < 4; ++t) {
    senders.emplace_back([&, t] {
      uint64_t round = 0;
      while (!stop.load()) {
        // Each stream goes to whoever leads now (or anyone, between terms).
        const std::vector<int> now = Leaders();
        const int target = now.empty() ? t % 3 : now[0];
        HeartbeatClient client(channels_[target]);
        while (!stop.load()) {
          auto resp = client.Call(FlowReport(100 + t, {{1, ++round, 1}}));
          if (!resp.has_value()) break;
          if (resp->header().has_error()) {
            EXPECT_EQ(resp->header().error().code(), core::kNotLeaderErrorCode);
            EXPECT_FALSE(resp->header().error().err_msg().empty());
            not_leader.fetch_add(1);
          } else {
            answered.fetch_add(1);
          }
        }
        const grpc::Status end = client.Close();
        if (end.error_code() == grpc::StatusCode::ABORTED) {
          aborted.fetch_add(1);
        } else if (!end.ok() &&
                   end.error_code() != grpc::StatusCode::CANCELLED) {
          other.fetch_add(1);
        }
      }
    });
  }
  for (int change = 0; change < 5; ++change) {
    ASSERT_TRUE(WaitFor([&] { return answered.load() > 200 * (change + 1); }))
        << "reports stalled at " << answered.load();
    metasrv::v1::LeaderChangeResponse resp;
    ASSERT_TRUE(LeaderChange(leader, &resp).ok());
    leader = WaitForOneLeader(absl::Seconds(20), leader);
    ASSERT_GE(leader, 0) << "no new leader after change " << change;
  }
  stop.store(true);
  for (std::thread& t : senders) t.join();
  EXPECT_GT(aborted.load(), 0);
  EXPECT_EQ(other.load(), 0);
  EXPECT_TRUE(Report(leader, 9, 9, 9));
}

INSTANTIATE_TEST_SUITE_P(Stores, HaTest,
                         ::testing::Values("etcd_store", "postgres_store",
                                           "mysql_store"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace metasrv::server
