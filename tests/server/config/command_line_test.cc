// The real binary's command line: help, version, exit codes, the TOML config
// file and GREPTIMEDB_METASRV__* environment, and their precedence.
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/server/test_util.h"

namespace metasrv::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

struct Ran {
  int exit_code = -1;
  std::string out;  // Its stdout.
};

// Runs the binary with `args` (after `env`, through /usr/bin/env) to its end;
// with `and_stderr`, its stderr is read with its stdout.
Ran RunBinary(const std::vector<std::string>& args,
              const std::vector<std::string>& env = {},
              bool and_stderr = false) {
  std::vector<std::string> argv = {"/usr/bin/env"};
  if (and_stderr)
    argv = {"/bin/sh", "-c", "exec \"$0\" \"$@\" 2>&1", "/usr/bin/env"};
  argv.insert(argv.end(), env.begin(), env.end());
  argv.push_back(METASRV_BINARY);
  argv.insert(argv.end(), args.begin(), args.end());
  ChildProcess child(argv);
  Ran ran;
  while (std::optional<std::string> line = child.ReadLine()) {
    ran.out += *line + "\n";
  }
  std::optional<int> status = child.Wait(absl::Seconds(10));
  EXPECT_TRUE(status.has_value());
  if (status.has_value() && WIFEXITED(*status)) {
    ran.exit_code = WEXITSTATUS(*status);
  }
  return ran;
}

std::string TempFile(const std::string& text) {
  char path[] = "/tmp/metasrv-toml-XXXXXX";
  const int fd = mkstemp(path);
  close(fd);
  std::ofstream(path) << text;
  return path;
}

TEST(CommandLineTest, HelpAndVersion) {
  for (const char* flag : {"--help", "-h"}) {
    Ran help = RunBinary({flag});
    EXPECT_EQ(help.exit_code, 0) << flag;
    EXPECT_THAT(help.out, HasSubstr("Usage: metasrv [-c FILE]"));
    EXPECT_THAT(help.out,
                HasSubstr("--bind_addr (default \"127.0.0.1:3002\")"));
    EXPECT_THAT(help.out, HasSubstr("Exit codes: 0"));
  }
  Ran version = RunBinary({"--version"});
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_THAT(version.out, HasSubstr("metasrv 0.1.0 (commit "));
  EXPECT_THAT(version.out, HasSubstr(" build)"));
  EXPECT_THAT(version.out, ::testing::Not(HasSubstr("NDEBUG")));
}

TEST(CommandLineTest, UsageErrorsExitWithTwo) {
  EXPECT_EQ(RunBinary({"stray"}).exit_code, 2);
  EXPECT_EQ(RunBinary({"--bind_addr=127.0.0.1:0", "--", "stray"}).exit_code, 2);
  EXPECT_EQ(RunBinary({"--no_such_flag=1"}).exit_code, 2);
  EXPECT_EQ(RunBinary({"--max_streams=lots"}).exit_code, 2);
  EXPECT_EQ(RunBinary({"--max_streams"}).exit_code, 2);
  EXPECT_EQ(RunBinary({"-c"}).exit_code, 2);
  EXPECT_EQ(RunBinary({"-c", "/nonexistent.toml"}).exit_code, 2);
  // A backend without its --store_addrs, or one that does not exist.
  EXPECT_EQ(RunBinary({"--backend=postgres_store", "--bind_addr=127.0.0.1:0"})
                .exit_code,
            2);
  EXPECT_EQ(RunBinary({"--backend=mongo_store", "--store_addrs=x",
                       "--bind_addr=127.0.0.1:0"})
                .exit_code,
            2);
  // Flags in a --flagfile are checked like those on the command line.
  EXPECT_EQ(RunBinary({"--flagfile=/nonexistent"}).exit_code, 2);
  const std::string flags = TempFile("# comment\n\n--max_streams=lots\n");
  EXPECT_EQ(RunBinary({"--flagfile=" + flags}).exit_code, 2);
  unlink(flags.c_str());
  const std::string bad = TempFile("[grpc]\nbind_addr = 3002\n");
  EXPECT_EQ(RunBinary({"-c", bad}).exit_code, 2);
  EXPECT_EQ(RunBinary({"--print_config"},
                      {"GREPTIMEDB_METASRV__HEARTBEAT_INTERVAL=soon"})
                .exit_code,
            2);
  unlink(bad.c_str());
}

// A duration its consumer cannot hold is refused, naming the flag, never
// wrapped: 1000h of keepalive as gRPC's int milliseconds pinged ~900 times a
// second, and an infinite lease was refused by every store (nobody led).
TEST(CommandLineTest, DurationsOutOfTheirConsumersRangeExitTwo) {
  for (const char* bad :
       {"--keepalive_time=1000h", "--keepalive_time=inf",
        "--keepalive_timeout=1000h", "--keepalive_time=4294968296ms",
        "--lease_ttl=inf", "--lease_ttl=1000000h", "--heartbeat_interval=0",
        "--heartbeat_interval=inf", "--node_max_idle_time=inf",
        "--node_report_ttl=-1s", "--watch_min_interval=inf",
        "--flow_stall_after=inf"}) {
    Ran ran = RunBinary({bad, "--bind_addr=127.0.0.1:0", "--metrics_addr="}, {},
                        /*and_stderr=*/true);
    EXPECT_EQ(ran.exit_code, 2) << bad;
    const std::string flag(bad, std::string_view(bad).find('='));
    EXPECT_THAT(ran.out, HasSubstr(flag + "=")) << bad;
    EXPECT_THAT(ran.out, HasSubstr("out of range")) << bad;
  }
  // The TOML forms, GreptimeDB's key names, the same.
  for (const char* bad : {"[grpc]\nhttp2_keep_alive_interval = \"1000h\"\n",
                          "[grpc]\nhttp2_keep_alive_timeout = \"1000h\"\n",
                          "node_max_idle_time = \"100000days\"\n"}) {
    const std::string file = TempFile(bad);
    EXPECT_EQ(
        RunBinary({"-c", file, "--bind_addr=127.0.0.1:0", "--metrics_addr="})
            .exit_code,
        2)
        << bad;
    unlink(file.c_str());
  }
}

// 20,000 levels of [a.a.a...] (40 KB) crashed the walk of the file (SIGSEGV);
// it is refused, as are deep inline tables and arrays.
TEST(CommandLineTest, DeeplyNestedConfigFilesExitTwo) {
  std::string dotted = "[a";
  for (int i = 1; i < 20000; ++i) dotted += ".a";
  std::string inline_tables = "a = ", arrays = "a = ";
  for (int i = 0; i < 20000; ++i) {
    inline_tables += "{b = ";
    arrays += "[";
  }
  inline_tables += "1" + std::string(20000, '}');
  arrays += std::string(20000, ']');
  for (const std::string& text :
       {dotted + "]\n", inline_tables + "\n", arrays + "\n"}) {
    const std::string file = TempFile(text);
    Ran ran = RunBinary({"-c", file, "--print_config"}, {}, true);
    EXPECT_EQ(ran.exit_code, 2) << ran.out.substr(0, 300);
    EXPECT_THAT(ran.out, HasSubstr("nest")) << ran.out.substr(0, 300);
    unlink(file.c_str());
  }
}

// Settings that would leave an HA cluster leaderless forever, run on
// defaults, or read without end: all refused at start with exit 2, as is
// every configuration found wrong only when starting (so systemd's
// RestartPreventExitStatus=2 stops a restart loop).
TEST(CommandLineTest, SettingsThatCannotWorkExitTwo) {
  const std::string store = "--store_addrs=127.0.0.1:1";
  const std::string nul_prefix = TempFile("store_key_prefix = \"a\\u0000b\"\n");
  const std::string table = TempFile("max_streams = {}\n");
  const std::string prefix_table = TempFile("store_key_prefix = {a = 1}\n");
  const std::string cert = TempFile("not a certificate\n");
  const std::string aliases = TempFile(
      "metrics_addr = \"127.0.0.1:1\"\n[http]\naddr = \"127.0.0.1:2\"\n");
  const std::vector<std::vector<std::string>> cases = {
      {"-c", nul_prefix, store},
      {"--store_key_prefix=\xff\xfe/", store},
      {"--store_key_prefix=" + std::string(600, 'p'), store,
       "--backend=mysql_store"},
      {"-c", table},
      {"-c", prefix_table},
      {"-c", aliases},
      {"-c", ""},
      {"-c", "/tmp"},
      {"--flagfile=/dev/zero"},
      {"--bind_addr=999.1.1.1:3002"},
      {"--tls_cert=" + cert},
      {"--backend=postgres_store", "--store_addrs=host=127.0.0.1",
       "--store_username=u", "--store_password_file=" + cert},
      {"--admin_token_file=/nonexistent/token"},
  };
  // Runs the binary with `args` and `more`: it must exit 2.
  const auto exits_two = [](const std::vector<std::string>& args,
                            const std::vector<std::string>& more) {
    std::vector<std::string> argv = args;
    argv.insert(argv.end(), more.begin(), more.end());
    argv.push_back("--metrics_addr=");
    Ran ran = RunBinary(argv, {}, /*and_stderr=*/true);
    EXPECT_EQ(ran.exit_code, 2) << absl::StrJoin(args, " ") << "\n" << ran.out;
  };
  for (const std::vector<std::string>& args : cases) exits_two(args, {});
  // Before listening: on a port that is taken, a bad setting still exits 2
  // (binding first would exit 1, "cannot listen").
  int taken_port = 0;
  const int taken = ListenSilently(&taken_port);
  ASSERT_GE(taken, 0);
  const std::string bind_taken =
      absl::StrCat("--bind_addr=127.0.0.1:", taken_port);
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{
           {"--tls_cert=" + cert},
           {"--tls_key=" + cert},
           {"--tls_client_ca=" + cert},
           {"--tls_cert=/nonexistent/cert", "--tls_key=" + cert},
           {"--admin_token_file=/nonexistent/token"},
           {"--backend_tls_ca_cert_path=/nonexistent/ca"},
           {"--backend=postgres_store", "--store_addrs=host=127.0.0.1",
            "--store_username=u", "--store_password_file=" + cert}}) {
    exits_two(args, {bind_taken});
  }
  close(taken);
  for (const std::string& f :
       {nul_prefix, table, prefix_table, cert, aliases}) {
    unlink(f.c_str());
  }
}

// Flags > environment > file > defaults, shown by --print_config.
TEST(CommandLineTest, PrecedenceFlagsThenEnvironmentThenFile) {
  const std::string file = TempFile(
      "heartbeat_interval = \"2s\"\n"
      "max_streams = 5\n"
      "max_nodes = 6\n"
      "[grpc]\nbind_addr = \"127.0.0.1:1111\"\n"
      "[http]\naddr = \"127.0.0.1:4111\"\n");
  Ran ran = RunBinary(
      {"-c", file, "--max_streams", "7", "--print_config"},
      {"GREPTIMEDB_METASRV__GRPC__BIND_ADDR=127.0.0.1:2222",
       "GREPTIMEDB_METASRV__MAX_STREAMS=8", "GREPTIMEDB_METASRV__MAX_NODES=9"});
  EXPECT_EQ(ran.exit_code, 0);
  EXPECT_THAT(ran.out, HasSubstr("heartbeat_interval = '2s'"));     // File.
  EXPECT_THAT(ran.out, HasSubstr("addr = '127.0.0.1:4111'"));       // File.
  EXPECT_THAT(ran.out, HasSubstr("bind_addr = '127.0.0.1:2222'"));  // Env.
  EXPECT_THAT(ran.out, HasSubstr("max_nodes = 9"));                 // Env.
  EXPECT_THAT(ran.out, HasSubstr("max_streams = 7"));               // Flag.
  EXPECT_THAT(ran.out, HasSubstr("watch_min_interval = '500ms'"));  // Default.
  // What --print_config prints is a config file that gives the same.
  const std::string printed = TempFile(ran.out);
  Ran again = RunBinary({"-c", printed, "--print_config"});
  EXPECT_EQ(again.exit_code, 0);
  EXPECT_EQ(again.out, ran.out);
  unlink(file.c_str());
  unlink(printed.c_str());
}

// --print_config and --check_config check first (a bad backend exits 2),
// mask the password of a store address, and --check_config names every
// ignored key in one line.
TEST(CommandLineTest, CheckConfigChecksMasksAndSummarizesIgnoredKeys) {
  EXPECT_EQ(RunBinary({"--backend=mongo_store", "--store_addrs=x:1",
                       "--print_config"})
                .exit_code,
            2);
  Ran bad = RunBinary(
      {"--backend=mongo_store", "--store_addrs=x:1", "--check_config"}, {},
      /*and_stderr=*/true);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.out, HasSubstr("--backend=mongo_store is not supported"));
  // GreptimeDB's own keys with no meaning here are a note: upstream's
  // example file passes.
  const std::string file =
      TempFile("selector = \"round_robin\"\n[wal]\nprovider = \"kafka\"\n");
  Ran ran = RunBinary({"-c", file, "--backend=mysql_store",
                       "--store_addrs=mysql://meta:s3cret@127.0.0.1:3306/meta",
                       "--check_config"},
                      {}, /*and_stderr=*/true);
  EXPECT_EQ(ran.exit_code, 0) << ran.out;
  EXPECT_THAT(ran.out, HasSubstr("mysql://meta:***@127.0.0.1:3306/meta"));
  EXPECT_THAT(ran.out, ::testing::Not(HasSubstr("s3cret")));
  EXPECT_THAT(ran.out, HasSubstr("2 GreptimeDB metasrv key(s) with no meaning "
                                 "here ignored: selector, wal"));
  EXPECT_THAT(ran.out, HasSubstr("the configuration can work"));
  unlink(file.c_str());
  // A key neither knows (a misspelling) fails the check: the file would
  // bind the default address.
  const std::string typo =
      TempFile("mystery = 1\n[grpc]\nbind_adr = \"0.0.0.0:3102\"\n");
  Ran failed = RunBinary({"-c", typo, "--check_config"}, {},
                         /*and_stderr=*/true);
  EXPECT_EQ(failed.exit_code, 2) << failed.out;
  EXPECT_THAT(failed.out, HasSubstr("2 key(s) neither this service nor "
                                    "GreptimeDB knows: "));
  EXPECT_THAT(failed.out, HasSubstr("grpc.bind_adr"));
  EXPECT_THAT(failed.out, HasSubstr("mystery"));
  EXPECT_THAT(failed.out, ::testing::Not(HasSubstr("can work")));
  // Issue 46: starting with it bound the default address, the misspelled
  // key a warning. The server refuses to start with what the check refuses.
  Ran started = RunBinary({"-c", typo}, {}, /*and_stderr=*/true);
  EXPECT_EQ(started.exit_code, 2) << started.out;
  EXPECT_THAT(started.out, HasSubstr("grpc.bind_adr"));
  EXPECT_THAT(started.out, HasSubstr("the server does not start with them"));
  EXPECT_THAT(started.out, ::testing::Not(HasSubstr("serving on")));
  // The same for a variable of the environment that names no key.
  Ran from_env = RunBinary({}, {"GREPTIMEDB_METASRV__GRPC__BIND_ADR=0.0.0.0:1"},
                           /*and_stderr=*/true);
  EXPECT_EQ(from_env.exit_code, 2) << from_env.out;
  EXPECT_THAT(from_env.out, HasSubstr("grpc.bind_adr"));
  unlink(typo.c_str());
}

// GreptimeDB's config/metasrv.example.toml sets node_max_idle_time: here it
// means what it means upstream (cluster info expires, flow state stays), so
// copying that file switches on no report expiry.
TEST(CommandLineTest, GreptimeDbsNodeMaxIdleTimeLeavesReportExpiryOff) {
  const std::string file = TempFile(
      "node_max_idle_time = \"24hours\"\n"
      "store_addrs = [\"127.0.0.1:2379\"]\n");
  Ran ran = RunBinary({"-c", file, "--print_config"});
  EXPECT_EQ(ran.exit_code, 0);
  EXPECT_THAT(ran.out, HasSubstr("node_max_idle_time = '24h'"));
  EXPECT_THAT(ran.out, HasSubstr("node_report_ttl = '0s'"));
  unlink(file.c_str());
}

// --print_config prints what is in force: standalone has no election, so
// GreptimeDB's node_max_idle_time expires nothing there (as upstream), and
// a bound left to its rule is printed as the rule gives it.
TEST(CommandLineTest, PrintConfigPrintsTheValuesInForce) {
  const std::string file = TempFile("node_max_idle_time = \"24hours\"\n");
  Ran ran = RunBinary({"-c", file, "--print_config",
                       "--grpc_memory_limit=20MiB", "--max_streams=77"});
  EXPECT_EQ(ran.exit_code, 0);
  EXPECT_THAT(ran.out, HasSubstr("node_max_idle_time = '0s'"));
  EXPECT_THAT(ran.out, HasSubstr("max_calls = 1024\n"));
  EXPECT_THAT(ran.out, HasSubstr("max_calls_per_peer = 0\n"));
  EXPECT_THAT(ran.out, HasSubstr("heartbeat_silence_limit = '0s'\n"));
  // The rule, with the limits it gives each role.
  EXPECT_THAT(ran.out, HasSubstr("flownodes and datanodes (told 3s) 12s, "
                                 "frontends (told 18s) 57s; before the "
                                 "handshake, request_timeout (10s)\n"));
  EXPECT_THAT(ran.out, HasSubstr("max_reply_bytes_per_peer = "));
  EXPECT_THAT(ran.out, Not(HasSubstr("max_reply_bytes_per_peer = 0\n")));
  unlink(file.c_str());
}

TEST(CommandLineTest, ServesWithAGreptimeDbStyleConfigFile) {
  const std::string file = TempFile(
      "backend = \"memory_store\"\n"
      "heartbeat_interval = \"1500ms\"\n"
      "selector = \"round_robin\"\n"
      "[http]\naddr = \"\"\n");
  ServerProcess server({"-c", file});
  HeartbeatClient flownode(server.channel());
  auto resp = flownode.Call(Request(meta::FLOWNODE, 1));
  ASSERT_TRUE(resp.has_value());
  EXPECT_EQ(resp->heartbeat_config().heartbeat_interval_ms(), 1500u);
  unlink(file.c_str());
}

// GreptimeDB's [logging] dir: the log goes to hourly files there too, the
// folder made if missing.
TEST(CommandLineTest, LoggingDirGetsTheLogInHourlyFiles) {
  char base[] = "/tmp/metasrv-logs-XXXXXX";
  ASSERT_NE(mkdtemp(base), nullptr);
  const std::string dir = std::string(base) + "/logs";
  const std::string file =
      TempFile("[logging]\ndir = \"" + dir +
               "\"\nmax_log_files = 24\n[http]\naddr = \"\"\n");
  {
    ServerProcess server({"-c", file});
    HeartbeatClient flownode(server.channel());
    ASSERT_TRUE(flownode.Call(Request(meta::FLOWNODE, 1)).has_value());
  }
  std::string text;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    EXPECT_TRUE(absl::StartsWith(name, "metasrv_")) << name;
    EXPECT_TRUE(absl::EndsWith(name, ".log")) << name;
    std::ifstream in(entry.path());
    text += std::string(std::istreambuf_iterator<char>(in), {});
  }
  EXPECT_THAT(text, HasSubstr("serving on 127.0.0.1:"));
  EXPECT_THAT(text, HasSubstr("flownode 1 connected from"));
  std::filesystem::remove_all(base);
  // A file where the folder should be: exit 2, naming the setting.
  Ran bad = RunBinary(
      {"--log_dir=" + file, "--bind_addr=127.0.0.1:0", "--metrics_addr="}, {},
      /*and_stderr=*/true);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.out, HasSubstr("--log_dir"));
  unlink(file.c_str());
}

// With --log_format=json, a setting refused before start is a JSON line too.
TEST(CommandLineTest, ErrorsBeforeStartAreJsonInJsonFormat) {
  Ran ran = RunBinary(
      {"--log_format=json", "--backend=mongo_store", "--store_addrs=x:1",
       "--bind_addr=127.0.0.1:0", "--metrics_addr="},
      {}, /*and_stderr=*/true);
  EXPECT_EQ(ran.exit_code, 2);
  EXPECT_THAT(ran.out, ::testing::StartsWith("{\"time\":\"")) << ran.out;
  EXPECT_THAT(ran.out, HasSubstr("\"level\":\"error\",\"msg\":\"--backend="
                                 "mongo_store is not supported"))
      << ran.out;
}

// Issue 38, item 5: the errors of the command line itself (an unknown
// flag, a TOML file that does not parse, a bad value from the environment)
// are JSON lines too when JSON is asked for, on the command line, in the
// environment or in the config file; every line is one JSON object.
TEST(CommandLineTest, CommandLineErrorsAreJsonInJsonFormat) {
  const std::string broken = TempFile("bad = [\n");
  const std::string json_file =
      TempFile("[logging]\nlog_format = \"json\"\n[grpc]\nbind_adr = \"x\"\n");
  const std::vector<
      std::pair<std::vector<std::string>, std::vector<std::string>>>
      cases = {
          {{"--log_format=json", "--no_such_flag"}, {}},
          {{"--log_format", "json", "-c", broken}, {}},
          {{"--max_nodes=x"}, {"GREPTIMEDB_METASRV__LOGGING__LOG_FORMAT=json"}},
          {{"-c", json_file, "--check_config"}, {}},
      };
  for (const auto& [args, env] : cases) {
    Ran ran = RunBinary(args, env, /*and_stderr=*/true);
    EXPECT_EQ(ran.exit_code, 2) << args[0];
    std::string errors;
    for (absl::string_view line : absl::StrSplit(ran.out, '\n')) {
      if (line.empty() || line[0] != '{') continue;  // --print_config's TOML.
      EXPECT_THAT(std::string(line), ::testing::EndsWith("}")) << line;
      if (absl::StrContains(line, "\"level\":\"error\"")) {
        errors += std::string(line);
      }
    }
    EXPECT_THAT(errors, HasSubstr("(see metasrv --help)")) << ran.out;
    EXPECT_THAT(ran.out, ::testing::Not(HasSubstr("metasrv: "))) << ran.out;
  }
  // Without JSON asked for: text.
  Ran text = RunBinary({"--no_such_flag"}, {}, /*and_stderr=*/true);
  EXPECT_THAT(text.out, ::testing::StartsWith("metasrv: unknown flag"));
  unlink(broken.c_str());
  unlink(json_file.c_str());
}

// A port taken by someone else: the server says which flag to change.
TEST(CommandLineTest, MetricsPortTakenNamesTheFlag) {
  int port = 0;
  const int taken = ListenSilently(&port);
  ASSERT_GE(taken, 0);
  // Its stderr into the stdout this test reads.
  ChildProcess child(
      {"/bin/sh", "-c",
       absl::StrCat(METASRV_BINARY, " --bind_addr=127.0.0.1:", FreePort(),
                    " --metrics_addr=127.0.0.1:", port, " 2>&1")});
  std::string out;
  while (std::optional<std::string> line = child.ReadLine()) out += *line;
  std::optional<int> status = child.Wait(absl::Seconds(10));
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(WEXITSTATUS(*status), 1);
  EXPECT_THAT(out, HasSubstr("choose another with --metrics_addr")) << out;
  close(taken);
}

// A datagram socket standing in for systemd's notify socket.
class NotifySocket {
 public:
  NotifySocket() {
    char dir[] = "/tmp/metasrv-notify-XXXXXX";
    dir_ = mkdtemp(dir);
    path_ = dir_ + "/notify";
    fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path_.c_str());
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  }
  ~NotifySocket() {
    close(fd_);
    unlink(path_.c_str());
    rmdir(dir_.c_str());
  }
  const std::string& path() const { return path_; }
  // The next datagram, waiting up to 10 s; empty if none came.
  std::string Next() {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, 10000) != 1) return "";
    char buf[512];
    const ssize_t n = recv(fd_, buf, sizeof(buf), 0);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
  }

 private:
  std::string dir_, path_;
  int fd_ = -1;
};

// Type=notify: READY=1 once it serves, STOPPING=1 when SIGTERM comes.
TEST(CommandLineTest, TellsSystemdWhenItServesAndWhenItStops) {
  NotifySocket notify;
  const std::string addr = absl::StrCat("127.0.0.1:", FreePort());
  ChildProcess server({"/usr/bin/env", "NOTIFY_SOCKET=" + notify.path(),
                       METASRV_BINARY, "--bind_addr=" + addr,
                       "--metrics_addr="});
  EXPECT_EQ(notify.Next(), "READY=1");
  // Ready means serving: a call succeeds at once.
  EXPECT_TRUE(AcceptsTcp(addr));
  server.Signal(SIGTERM);
  EXPECT_EQ(notify.Next(), "STOPPING=1");
  std::optional<int> status = server.Wait(absl::Seconds(10));
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(WEXITSTATUS(*status), 0);
}

}  // namespace
}  // namespace metasrv::testing
