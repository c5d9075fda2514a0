// The TOML config file and GREPTIMEDB_METASRV__* environment (config_file.h).
#include "server/config/config_file.h"

#include <unistd.h>

#include <fstream>
#include <map>
#include <string>

#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/config/settings.h"
#include "server/config/units.h"

namespace metasrv::server {
namespace {

using ::testing::HasSubstr;

// Setting name -> value of the assignments, as --print_config writes it.
std::map<std::string, std::string> Values(const ConfigValues& c) {
  std::map<std::string, std::string> out;
  for (const ConfigAssignment& a : c.assignments) {
    ServerOptions options;
    EXPECT_TRUE(a.setting->Set(a.input, a.source, &options).ok());
    out[a.setting->name()] = SettingText(a.setting->Get(options));
  }
  return out;
}

class ConfigFileTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& text) {
    char path[] = "/tmp/metasrv-config-XXXXXX";
    const int fd = mkstemp(path);
    EXPECT_GE(fd, 0);
    close(fd);
    std::ofstream(path) << text;
    paths_.push_back(path);
    return path;
  }
  void TearDown() override {
    for (const std::string& p : paths_) unlink(p.c_str());
  }
  std::vector<std::string> paths_;
};

TEST(HumanDurationTest, GreptimeDbDurations) {
  EXPECT_EQ(*ParseHumanDuration("3s"), absl::Seconds(3));
  EXPECT_EQ(*ParseHumanDuration("500ms"), absl::Milliseconds(500));
  EXPECT_EQ(*ParseHumanDuration("24hours"), absl::Hours(24));
  EXPECT_EQ(*ParseHumanDuration("1h 30m"), absl::Minutes(90));
  EXPECT_EQ(*ParseHumanDuration("1h30m"), absl::Minutes(90));
  EXPECT_EQ(*ParseHumanDuration("10000ms"), absl::Seconds(10));
  EXPECT_EQ(*ParseHumanDuration("0"), absl::ZeroDuration());
  for (const char* bad : {"", "3", "s", "3 parsecs", "-1s", "1.2.3s"}) {
    EXPECT_FALSE(ParseHumanDuration(bad).ok()) << bad;
  }
}

TEST(ReadableSizeTest, BinaryUnitsAsGreptimeDb) {
  EXPECT_EQ(*ParseReadableSize("512MB"), 512ull << 20);
  EXPECT_EQ(*ParseReadableSize("64KiB"), 64ull << 10);
  EXPECT_EQ(*ParseReadableSize("1500KiB"), 1500ull << 10);
  EXPECT_EQ(*ParseReadableSize("4194304"), 4194304ull);
  EXPECT_EQ(*ParseReadableSize("0.5GB"), 1ull << 29);
  EXPECT_EQ(*ParseReadableSize("1024B"), 1024ull);
  for (const char* bad : {"", "b", "1b", "0.5kb", " 5_KB", "4B7", "-1MB"}) {
    EXPECT_FALSE(ParseReadableSize(bad).ok()) << bad;
  }
}

TEST_F(ConfigFileTest, GreptimeDbKeysOwnKeysAndIgnoredOnes) {
  const std::string path = Write(R"(
data_home = "./greptimedb_data"
store_addrs = ["10.0.0.1:2379", "10.0.0.2:2379"]
backend = "etcd_store"
store_key_prefix = "cluster-a/"
selector = "round_robin"
node_max_idle_time = "24hours"
max_streams = 777
watch_min_interval = "250ms"
mystery_knob = 3

[grpc]
bind_addr = "0.0.0.0:3002"
server_addr = "10.0.0.9:3002"
max_recv_message_size = "8MB"

[http]
addr = "127.0.0.1:4999"

[logging]
level = "debug"
log_format = "json"
dir = "./logs"

[wal]
provider = "raft_engine"
)");
  absl::StatusOr<ConfigValues> c = LoadConfigFile(path);
  ASSERT_TRUE(c.ok()) << c.status();
  const auto v = Values(*c);
  EXPECT_EQ(v.at("store_addrs"), "10.0.0.1:2379,10.0.0.2:2379");
  EXPECT_EQ(v.at("backend"), "etcd_store");
  EXPECT_EQ(v.at("store_key_prefix"), "cluster-a/");
  // GreptimeDB's node_max_idle_time is ours: cluster info and records go,
  // flow state stays (src/common/meta/src/node_expiry_listener.rs).
  EXPECT_EQ(v.at("node_max_idle_time"), "24h");
  EXPECT_EQ(v.count("node_report_ttl"), 0u);
  EXPECT_EQ(v.at("max_streams"), "777");
  EXPECT_EQ(v.at("watch_min_interval"), "250ms");
  EXPECT_EQ(v.at("bind_addr"), "0.0.0.0:3002");
  EXPECT_EQ(v.at("server_addr"), "10.0.0.9:3002");
  // Our request bound is ours: GreptimeDB's key of another default is not
  // read, and the note says so.
  EXPECT_EQ(v.count("max_message_bytes"), 0u);
  EXPECT_EQ(v.at("metrics_addr"), "127.0.0.1:4999");
  EXPECT_EQ(v.at("log_level"), "debug");
  EXPECT_EQ(v.at("log_format"), "json");
  const std::string notes = ::testing::PrintToString(c->notes);
  EXPECT_THAT(notes, HasSubstr("mystery_knob: unknown key"));
  EXPECT_THAT(notes, HasSubstr("selector: a GreptimeDB metasrv key"));
  EXPECT_THAT(notes, HasSubstr("grpc.max_recv_message_size: GreptimeDB's "
                               "request limit (512 MB by default upstream) is "
                               "not read here"));
  // GreptimeDB's log folder is ours too now.
  EXPECT_EQ(v.at("log_dir"), "./logs");
  EXPECT_THAT(notes, ::testing::Not(HasSubstr("logging.dir")));
  EXPECT_THAT(notes, HasSubstr("wal: a GreptimeDB metasrv key"));
  ServerOptions options;
  ASSERT_TRUE(ApplyAssignments(c->assignments, &options).ok());
  EXPECT_EQ(options.max_streams, 777u);
}

TEST_F(ConfigFileTest, WrongTypeNamesTheKey) {
  absl::StatusOr<ConfigValues> c =
      LoadConfigFile(Write("[grpc]\nbind_addr = 3002\n"));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(c.status().message(),
              HasSubstr("grpc.bind_addr: expected a string, got an integer"));
  c = LoadConfigFile(Write("heartbeat_interval = 3\n"));
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(),
              HasSubstr("heartbeat_interval: expected a duration"));
  c = LoadConfigFile(Write("[backend_tls]\nmode = 1\n"));
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(),
              HasSubstr("backend_tls.mode: expected a string"));
  c = LoadConfigFile(Write("max_streams = \"many\"\n"));
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(),
              HasSubstr("max_streams: expected an integer"));
}

TEST_F(ConfigFileTest, SyntaxErrorAndMissingFile) {
  absl::StatusOr<ConfigValues> c = LoadConfigFile(Write("a = 1\n[grpc\n"));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(c.status().message(), HasSubstr(":2:"));
  c = LoadConfigFile("/nonexistent/metasrv.toml");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kNotFound);
}

TEST_F(ConfigFileTest, EnvironmentInGreptimeDbLayout) {
  absl::StatusOr<ConfigValues> c = LoadConfigEnv({
      "PATH=/usr/bin", "GREPTIMEDB_METASRV__GRPC__BIND_ADDR=127.0.0.1:3999",
      "GREPTIMEDB_METASRV__STORE_ADDRS=a:2379,b:2379",
      "GREPTIMEDB_METASRV__HEARTBEAT_INTERVAL=2s",
      "GREPTIMEDB_METASRV__MAX_STREAMS=12",
      "GREPTIMEDB_METASRV__SELECTOR=lease_based",
      "GREPTIMEDB_METASRV__LOG_LEVEL=",  // Empty: ignored, as GreptimeDB.
  });
  ASSERT_TRUE(c.ok()) << c.status();
  const auto v = Values(*c);
  EXPECT_EQ(v.size(), 4u);
  EXPECT_EQ(v.at("bind_addr"), "127.0.0.1:3999");
  EXPECT_EQ(v.at("store_addrs"), "a:2379,b:2379");
  EXPECT_EQ(v.at("heartbeat_interval"), "2s");
  EXPECT_EQ(v.at("max_streams"), "12");
  EXPECT_EQ(c->notes.size(), 1u);
  c = LoadConfigEnv({"GREPTIMEDB_METASRV__HEARTBEAT_INTERVAL=soon"});
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(),
              HasSubstr("environment GREPTIMEDB_METASRV__HEARTBEAT_INTERVAL"));
}

TEST(MaskPasswordsTest, UrlsAndConnectionStrings) {
  EXPECT_EQ(MaskPasswords("mysql://meta:s3cret@db:3306/meta"),
            "mysql://meta:***@db:3306/meta");
  EXPECT_EQ(MaskPasswords("postgresql://u:p%40ss@h/db?sslmode=require"),
            "postgresql://u:***@h/db?sslmode=require");
  EXPECT_EQ(MaskPasswords("host=h password = 'a b\\'c' dbname=d"),
            "host=h password = *** dbname=d");
  EXPECT_EQ(MaskPasswords("postgresql://u@h/db?password=x&sslmode=disable"),
            "postgresql://u@h/db?password=***&sslmode=disable");
  EXPECT_EQ(MaskPasswords("127.0.0.1:2379"), "127.0.0.1:2379");
  EXPECT_EQ(MaskPasswords("mysql://meta@db/meta"), "mysql://meta@db/meta");
}

TEST_F(ConfigFileTest, PrintedConfigReadsBackTheSame) {
  ServerOptions options;
  options.bind_addr = "127.0.0.1:3111";
  options.max_streams = 99;
  options.store_addrs = {"x:1", "y:2"};
  options.watch.min_interval = absl::Milliseconds(1500);
  const std::string printed = EffectiveConfigToml(options);
  EXPECT_THAT(printed, HasSubstr("[grpc]"));
  absl::StatusOr<ConfigValues> back = LoadConfigFile(Write(printed));
  ASSERT_TRUE(back.ok()) << back.status() << "\n" << printed;
  const auto v = Values(*back);
  EXPECT_EQ(v.at("bind_addr"), "127.0.0.1:3111");
  EXPECT_EQ(v.at("max_streams"), "99");
  EXPECT_EQ(v.at("store_addrs"), "x:1,y:2");
  EXPECT_EQ(v.at("watch_min_interval"), "1500ms");
  EXPECT_TRUE(back->notes.empty()) << ::testing::PrintToString(back->notes);
}

}  // namespace
}  // namespace metasrv::server
