// The table of settings (settings.h) and the one check (checked_options.h).
#include "server/config/settings.h"

#include <unistd.h>

#include <fstream>
#include <set>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/config/checked_options.h"

namespace metasrv::server {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(SettingsTest, EveryRowHasItsOwnNameKeyAndEnvironmentVariable) {
  std::set<std::string> names, keys, envs;
  for (const std::unique_ptr<Setting>& s : Settings()) {
    EXPECT_TRUE(names.insert(s->name()).second) << s->name();
    EXPECT_TRUE(keys.insert(s->key()).second) << s->key();
    EXPECT_TRUE(envs.insert(s->env()).second) << s->env();
    EXPECT_NE(std::string(s->help()), "") << s->name();
    EXPECT_EQ(FindSetting(s->name()), s.get());
    EXPECT_EQ(FindSettingByKey(s->key()), s.get());
    // Its own name is a top-level key too.
    EXPECT_EQ(FindSettingByKey(s->name()), s.get());
  }
  EXPECT_EQ(FindSetting("no_such_setting"), nullptr);
  EXPECT_EQ(FindSettingByKey("grpc.no_such_key"), nullptr);
  const Setting* bind = FindSettingByKey("grpc.bind_addr");
  ASSERT_NE(bind, nullptr);
  EXPECT_STREQ(bind->name(), "bind_addr");
  EXPECT_EQ(bind->env(), "GREPTIMEDB_METASRV__GRPC__BIND_ADDR");
  EXPECT_TRUE(bind->greptime_key());
  EXPECT_FALSE(FindSetting("max_streams")->greptime_key());
}

TEST(SettingsTest, ARowSetsAndReadsBackItsMember) {
  ServerOptions o;
  SettingInput in;
  in.text = "1h30m";
  ASSERT_TRUE(FindSetting("node_max_idle_time")->Set(in, "t", &o).ok());
  EXPECT_EQ(o.flow_state.node_max_idle_time, absl::Minutes(90));
  in.text = "4MiB";
  ASSERT_TRUE(FindSetting("max_message_bytes")->Set(in, "t", &o).ok());
  EXPECT_EQ(o.transport.limits.max_message_bytes, 4 << 20);
  in.text = "7";
  ASSERT_TRUE(FindSetting("metrics_top_flows")->Set(in, "t", &o).ok());
  EXPECT_EQ(o.flow_alerts.top_flows, 7u);
  EXPECT_EQ(SettingText(FindSetting("metrics_top_flows")->Get(o)), "7");
  in.text = "lots";
  absl::Status bad = FindSetting("max_streams")->Set(in, "--max_streams", &o);
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.message()),
              StartsWith("--max_streams: expected an integer"));
  EXPECT_EQ(o.max_streams, ServerOptions().max_streams);  // Unchanged.
}

// The message of CheckOptions for `o`; "" when it passes.
std::string Refusal(const ServerOptions& o) {
  absl::StatusOr<CheckedOptions> checked = CheckOptions(o);
  if (checked.ok()) return "";
  EXPECT_EQ(checked.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(checked.status().message());
}

TEST(CheckOptionsTest, EveryBadSettingIsNamed) {
  ServerOptions o;
  o.reads.threads = 65;
  EXPECT_THAT(Refusal(o), StartsWith("--read_threads=65 is out of range"));
  o = ServerOptions();
  o.lease_ttl = absl::Milliseconds(2500);
  EXPECT_THAT(Refusal(o), StartsWith("--lease_ttl=2500ms must be whole"));
  o = ServerOptions();
  o.bind_addr = "nowhere";
  EXPECT_THAT(Refusal(o), StartsWith("--bind_addr=nowhere is not host:port"));
  o = ServerOptions();
  o.log_format = "xml";
  EXPECT_THAT(Refusal(o), StartsWith("--log_format=xml is not supported"));
  o = ServerOptions();
  o.tls_cert = "/etc/hostname";
  EXPECT_EQ(Refusal(o), "--tls_cert and --tls_key go together");
  o = ServerOptions();
  o.backend = "postgres_store";
  EXPECT_THAT(Refusal(o), StartsWith("--backend=postgres_store needs"));
  o.store_addrs = {"host=127.0.0.1"};
  o.store_username = "u";
  o.store_password_file = "/etc/hostname";
  EXPECT_THAT(Refusal(o), StartsWith("--store_username is for etcd"));
  o = ServerOptions();
  o.store_key_prefix = std::string(150, 'p');
  o.election_name = std::string(60, 'e');
  EXPECT_THAT(Refusal(o), HasSubstr("at most 200 bytes (210 given)"));
  o = ServerOptions();
  o.transport.threads = 300;
  EXPECT_THAT(Refusal(o), StartsWith("--transport_threads=300 is out of range"));
  o = ServerOptions();
  o.admin_token_file = "/nonexistent/token";
  EXPECT_THAT(Refusal(o), StartsWith("--admin_token_file /nonexistent/token"));
  EXPECT_EQ(Refusal(ServerOptions()), "");
}

// An address not in the backend's form would be waited on forever (libpq
// reads "127.0.0.1:44379" as no host, so a Unix socket): refused now.
TEST(CheckOptionsTest, AStoreAddressMustBeInItsBackendsForm) {
  ServerOptions o;
  o.backend = "postgres_store";
  o.store_addrs = {"127.0.0.1:44379"};
  EXPECT_THAT(Refusal(o),
              StartsWith("--store_addrs is not a PostgreSQL connection"));
  o.store_addrs = {"host=127.0.0.1 port=5432 dbname=meta"};
  EXPECT_EQ(Refusal(o), "");
  o.store_addrs = {"postgresql://u@127.0.0.1:5432/meta"};
  EXPECT_EQ(Refusal(o), "");
  o.backend = "etcd_store";
  o.store_addrs = {"127.0.0.1:2379", "http://127.0.0.1:2379"};
  EXPECT_THAT(Refusal(o), HasSubstr("'http://127.0.0.1:2379' is not an etcd"));
  o.backend = "mysql_store";
  o.store_addrs = {"127.0.0.1:3306"};
  EXPECT_THAT(Refusal(o), StartsWith("--store_addrs: "));
  o = ServerOptions();
  o.store_password_file = "/etc/hostname";
  EXPECT_EQ(Refusal(o), "--store_password_file needs a store (--store_addrs)");
}

TEST(CheckOptionsTest, TheBackendIsDecided) {
  ServerOptions o;
  absl::StatusOr<CheckedOptions> c = CheckOptions(o);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->options().backend, "memory_store");
  o.store_addrs = {"", "127.0.0.1:2379"};
  c = CheckOptions(o);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->options().backend, "etcd_store");
  EXPECT_EQ(c->options().store_addrs,
            std::vector<std::string>{"127.0.0.1:2379"});
  o.backend = "memory_store";
  c = CheckOptions(o);
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->options().store_addrs.empty());
}

// The files are read once, by the check: what the server starts from is
// what they held then.
TEST(CheckOptionsTest, NamedFilesAreReadOnceIntoTheCheckedOptions) {
  char path[] = "/tmp/metasrv-settings-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  std::ofstream(path) << "  0123456789abcdef0123456789abcdef \n";
  ServerOptions o;
  o.admin_token_file = path;
  o.store_addrs = {"127.0.0.1:2379"};
  o.store_username = "root";
  o.store_password_file = path;
  absl::StatusOr<CheckedOptions> c = CheckOptions(o);
  unlink(path);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->files().admin_token, "0123456789abcdef0123456789abcdef");
  EXPECT_EQ(c->files().store_password, "  0123456789abcdef0123456789abcdef");
  EXPECT_EQ(c->files().tls_cert, "");
}

// GreptimeDB's node_max_idle_time runs only with an election, as upstream
// registers its node expiry (src/meta-srv/src/metasrv.rs).
TEST(SettingsTest, NodeMaxIdleTimeRunsOnlyWithAnElection) {
  ServerOptions o;
  o.flow_state.node_max_idle_time = absl::Hours(24);
  absl::StatusOr<CheckedOptions> standalone = CheckOptions(o);
  ASSERT_TRUE(standalone.ok()) << standalone.status();
  EXPECT_EQ(standalone->options().backend, "memory_store");
  EXPECT_EQ(standalone->options().flow_state.node_max_idle_time,
            absl::ZeroDuration());
  for (const char* addr : {"127.0.0.1:2379", "postgresql://u@h/db",
                           "mysql://u@h:3306/db"}) {
    o.store_addrs = {addr};
    absl::StatusOr<CheckedOptions> elected = CheckOptions(o);
    ASSERT_TRUE(elected.ok()) << elected.status();
    EXPECT_EQ(elected->options().flow_state.node_max_idle_time,
              absl::Hours(24))
        << addr;
  }
}

// Each heartbeat stream's limit is the rule over what it was told; an
// expiry shorter than the silence a node at its told cadence may keep is
// said (not refused: it works, and drops honest nodes).
TEST(SettingsTest, ExpiriesShorterThanAToldNodesSilenceAreCautioned) {
  ServerOptions o;
  o.store_addrs = {"127.0.0.1:2379"};  // node_max_idle_time runs.
  absl::StatusOr<CheckedOptions> fine = CheckOptions(o);
  ASSERT_TRUE(fine.ok()) << fine.status();
  EXPECT_TRUE(fine->cautions().empty());
  EXPECT_EQ(SilenceLimit(fine->options().door, absl::Seconds(18),
                         absl::Seconds(3)),
            absl::Seconds(57));
  o.flow_state.node_report_ttl = absl::Seconds(5);
  o.flow_state.node_max_idle_time = absl::Seconds(30);
  o.door.heartbeat_silence_limit = absl::Seconds(60);  // A floor.
  absl::StatusOr<CheckedOptions> tight = CheckOptions(o);
  ASSERT_TRUE(tight.ok()) << tight.status();
  EXPECT_EQ(SilenceLimit(tight->options().door, absl::Seconds(3),
                         absl::Seconds(3)),
            absl::Seconds(60));
  ASSERT_EQ(tight->cautions().size(), 2u);
  EXPECT_NE(tight->cautions()[0].find("--node_report_ttl=5s is shorter than "
                                      "a flownode's heartbeat silence limit "
                                      "(1m)"),
            std::string::npos)
      << tight->cautions()[0];
  EXPECT_NE(tight->cautions()[1].find("--node_max_idle_time=30s"),
            std::string::npos);
  // The sweep looks often enough for the shortest limit.
  o.heartbeat.heartbeat_interval = absl::Milliseconds(100);
  o.heartbeat.retry_interval = absl::Milliseconds(100);
  o.door.heartbeat_silence_limit = absl::ZeroDuration();
  absl::StatusOr<CheckedOptions> fast = CheckOptions(o);
  ASSERT_TRUE(fast.ok()) << fast.status();
  EXPECT_EQ(fast->options().door.sweep_period, absl::Milliseconds(100));
}

// The options a server starts from hold the values in force: every bound
// left to a rule is decided once, by CheckOptions.
TEST(SettingsTest, DerivedBoundsAreDecidedOnceByTheCheck) {
  ServerOptions o;
  o.transport.limits.max_held_requests = 100 << 20;
  o.door.max_reply_bytes_in_flight = 64 << 20;
  o.max_streams = 123;
  absl::StatusOr<CheckedOptions> checked = CheckOptions(o);
  ASSERT_TRUE(checked.ok()) << checked.status();
  const PeerLimits& peers = checked->options().door.peers;
  EXPECT_EQ(peers.max_calls, (100u << 20) / (20u << 10));
  EXPECT_EQ(peers.max_calls_per_peer, 0u);  // No fixed cap: fair shares.
  EXPECT_EQ(peers.max_reply_bytes_per_peer, 16u << 20);
  for (CallKind kind :
       {CallKind::kHeartbeat, CallKind::kWatch, CallKind::kHealthWatch}) {
    EXPECT_EQ(peers.max_open[static_cast<int>(kind)], 123u);
  }
  EXPECT_EQ(peers.max_open[static_cast<int>(CallKind::kUnary)], 0u);
  // No floor: each stream's limit follows what it was told; the sweep
  // looks at least every second.
  EXPECT_EQ(checked->options().door.heartbeat_silence_limit,
            absl::ZeroDuration());
  EXPECT_EQ(checked->options().door.sweep_period, absl::Seconds(1));
  // Given values stay as given.
  o.door.peers.max_calls = 10;
  o.door.peers.max_calls_per_peer = 7;
  o.door.peers.max_reply_bytes_per_peer = 1000;
  checked = CheckOptions(o);
  ASSERT_TRUE(checked.ok());
  EXPECT_EQ(checked->options().door.peers.max_calls, 10u);
  EXPECT_EQ(checked->options().door.peers.max_calls_per_peer, 7u);
  EXPECT_EQ(checked->options().door.peers.max_reply_bytes_per_peer, 1000u);
  // Without gRPC's budget, no bound on calls.
  o = ServerOptions();
  o.transport.limits.max_held_requests = 0;
  checked = CheckOptions(o);
  ASSERT_TRUE(checked.ok());
  EXPECT_EQ(checked->options().door.peers.max_calls, 0u);
  EXPECT_EQ(checked->options().door.peers.max_calls_per_peer, 0u);
}

// A store address that names its kind decides the backend when --backend is
// not given: a PostgreSQL or MySQL URL was taken for an etcd endpoint.
TEST(SettingsTest, TheBackendFollowsTheStoreAddressesScheme) {
  for (const auto& [addr, backend] :
       std::vector<std::pair<std::string, std::string>>{
           {"postgresql://meta@127.0.0.1:5432/meta", "postgres_store"},
           {"postgres://meta@127.0.0.1:5432/meta", "postgres_store"},
           {"mysql://meta@127.0.0.1:3306/meta", "mysql_store"},
           {"127.0.0.1:2379", "etcd_store"}}) {
    ServerOptions o;
    o.store_addrs = {addr};
    absl::StatusOr<CheckedOptions> c = CheckOptions(o);
    ASSERT_TRUE(c.ok()) << addr << ": " << c.status();
    EXPECT_EQ(c->options().backend, backend) << addr;
  }
}

}  // namespace
}  // namespace metasrv::server
