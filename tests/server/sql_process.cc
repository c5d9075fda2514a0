#include "tests/server/sql_process.h"

#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/server/etcd_process.h"

namespace metasrv::testing {
namespace {

// Debian installs PostgreSQL's server programs under a versioned folder.
std::string PostgresBin(const std::string& program) {
  std::error_code ignored;
  for (const auto& entry :
       std::filesystem::directory_iterator("/usr/lib/postgresql", ignored)) {
    const std::string path = entry.path().string() + "/bin/" + program;
    if (access(path.c_str(), X_OK) == 0) return path;
  }
  ADD_FAILURE() << program << " not found (is Debian's postgresql installed?)";
  return program;
}

// Sends `signal` to `pid` and to its children (PostgreSQL runs a process
// per session, each in a session of its own, so a process group would not
// reach them).
void SignalWithChildren(pid_t pid, int signal) {
  std::vector<pid_t> children;  // Found first: a dead parent's are moved.
  std::error_code ignored;
  for (const auto& entry :
       std::filesystem::directory_iterator("/proc", ignored)) {
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    // pid (comm) state ppid ...: comm may hold spaces; read after ')'.
    const size_t close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 1));
    std::string state;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid == pid) children.push_back(std::stoi(entry.path().filename()));
  }
  kill(pid, signal);
  for (pid_t child : children) kill(child, signal);
  if (signal != SIGSTOP) return;
  children.push_back(pid);
  WaitUntilStopped(children);
}

}  // namespace

void WaitUntilStopped(const std::vector<pid_t>& pids) {
  // SIGSTOP is asynchronous: a busy server may still answer a request sent
  // right after kill() returns. Wait until every thread shows it stopped.
  std::error_code ignored;
  WaitFor(
      [&] {
        for (pid_t p : pids) {
          for (const auto& task : std::filesystem::directory_iterator(
                   "/proc/" + std::to_string(p) + "/task", ignored)) {
            std::ifstream stat(task.path() / "stat");
            std::string line;
            if (!std::getline(stat, line)) continue;  // Gone.
            const size_t close = line.rfind(')');
            if (close == std::string::npos || close + 2 >= line.size()) {
              continue;
            }
            const char state = line[close + 2];
            if (state != 'T' && state != 't' && state != 'Z' && state != 'X') {
              return false;
            }
          }
        }
        return true;
      },
      absl::Seconds(5));
}

bool RunCommand(const std::vector<std::string>& argv, absl::Duration timeout) {
  ChildProcess p(argv);
  while (p.ReadLine(timeout).has_value()) {
  }
  std::optional<int> status = p.Wait(timeout);
  return status.has_value() && WIFEXITED(*status) && WEXITSTATUS(*status) == 0;
}

std::unique_ptr<StoreProcess> StartStore(const std::string& backend) {
  if (backend == "postgres_store") return std::make_unique<PostgresProcess>();
  if (backend == "mysql_store") return std::make_unique<MariadbProcess>();
  return std::make_unique<EtcdProcess>();
}

SqlProcess::SqlProcess(std::string user, const ServerTls* tls)
    : user_(std::move(user)), tls_(tls != nullptr) {
  char dir[] = "/tmp/metasrv-sql-XXXXXX";
  if (mkdtemp(dir) == nullptr) {
    ADD_FAILURE() << "mkdtemp failed";
    return;
  }
  dir_ = dir;
  port_ = FreePort();
  if (geteuid() == 0) {
    const passwd* pw = getpwnam(user_.c_str());
    if (pw == nullptr) {
      ADD_FAILURE() << "no user " << user_;
      return;
    }
    EXPECT_EQ(chown(dir_.c_str(), pw->pw_uid, pw->pw_gid), 0);
    chmod(dir_.c_str(), 0700);
  }
  if (tls_) {
    const std::pair<const std::string*, const char*> files[] = {
        {&tls->cert, "server.pem"}, {&tls->key, "server.key"}};
    for (const auto& [from, name] : files) {
      const std::string to = dir_ + "/" + name;
      std::filesystem::copy_file(*from, to);
      chmod(to.c_str(), 0600);
      if (const passwd* pw = getpwnam(user_.c_str()); geteuid() == 0 && pw) {
        EXPECT_EQ(chown(to.c_str(), pw->pw_uid, pw->pw_gid), 0);
      }
    }
  }
}

SqlProcess::~SqlProcess() {
  Resume();
  Stop();
  if (!dir_.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
}

std::vector<std::string> SqlProcess::AsUser(
    std::vector<std::string> argv) const {
  if (geteuid() != 0) return argv;
  std::vector<std::string> out = {"/usr/bin/setpriv", "--reuid=" + user_,
                                  "--regid=" + user_, "--init-groups"};
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

void SqlProcess::Launch(const std::vector<std::string>& argv) {
  process_ = std::make_unique<ChildProcess>(AsUser(argv));
  const std::string addr = absl::StrCat("127.0.0.1:", port_);
  EXPECT_TRUE(WaitFor([&] { return AcceptsTcp(addr); }, absl::Seconds(60)))
      << argv[0] << " did not come up on " << addr;
}

void SqlProcess::Pause() {
  if (process_ != nullptr) SignalWithChildren(process_->pid(), SIGSTOP);
}

void SqlProcess::Resume() {
  if (process_ != nullptr) SignalWithChildren(process_->pid(), SIGCONT);
}

void SqlProcess::Stop() {
  if (process_ == nullptr) return;
  process_->Signal(stop_signal_);
  if (!process_->Wait(absl::Seconds(20)).has_value()) {
    SignalWithChildren(process_->pid(), SIGKILL);
    process_->Wait(absl::Seconds(10));
  }
  process_.reset();
}

PostgresProcess::PostgresProcess(const ServerTls* tls)
    : SqlProcess("postgres", tls) {
  stop_signal_ = SIGINT;  // Fast shutdown: ends the sessions too.
  const std::string pwfile = dir_ + "/pw";
  { std::ofstream(pwfile) << kSqlPassword << "\n"; }
  if (geteuid() == 0) {
    const passwd* pw = getpwnam(user_.c_str());
    if (pw != nullptr) {
      EXPECT_EQ(chown(pwfile.c_str(), pw->pw_uid, pw->pw_gid), 0);
    }
  }
  EXPECT_TRUE(RunCommand(
      AsUser({PostgresBin("initdb"), "--pgdata=" + dir_ + "/data",
              "--username=metasrv", "--pwfile=" + pwfile, "--auth-local=trust",
              "--auth-host=scram-sha-256", "--encoding=UTF8", "--no-sync"})))
      << "initdb failed";
  Start();
}

std::string PostgresProcess::AddressWithPassword(
    const std::string& password) const {
  return absl::StrCat("postgresql://metasrv:", password, "@127.0.0.1:", port_,
                      "/postgres?connect_timeout=5");
}

void PostgresProcess::Start() {
  std::vector<std::string> argv = {
      PostgresBin("postgres"), "-D",          dir_ + "/data",
      "-p",                    absl::StrCat(port_), "-k",
      dir_,                    "-c",          "listen_addresses=127.0.0.1",
      "-c",                    "fsync=off",   "-c",
      "log_min_messages=panic", "-c",         "shared_buffers=16MB"};
  if (tls_) {
    for (const std::string& setting :
         {std::string("ssl=on"), "ssl_cert_file=" + dir_ + "/server.pem",
          "ssl_key_file=" + dir_ + "/server.key"}) {
      argv.push_back("-c");
      argv.push_back(setting);
    }
  }
  Launch(argv);
  // Accepting TCP comes a moment before accepting sessions.
  EXPECT_TRUE(WaitFor(
      [&] {
        return RunCommand({PostgresBin("pg_isready"), "-q", "-h", "127.0.0.1",
                           "-p", absl::StrCat(port_)},
                          absl::Seconds(5));
      },
      absl::Seconds(60)));
}

MariadbProcess::MariadbProcess(const ServerTls* tls)
    : SqlProcess("mysql", tls) {
  stop_signal_ = SIGTERM;
  std::vector<std::string> install = {
      "/usr/bin/mariadb-install-db", "--no-defaults",
      "--datadir=" + dir_ + "/data", "--auth-root-authentication-method=normal",
      "--skip-test-db"};
  if (geteuid() == 0) install.push_back("--user=" + user_);
  EXPECT_TRUE(RunCommand(install, absl::Seconds(120)))
      << "mariadb-install-db failed";
  Start();
  EXPECT_TRUE(RunCommand(
      {"/usr/bin/mariadb", "--no-defaults", "--socket=" + dir_ + "/sock",
       "--user=root", "-e",
       absl::StrCat("CREATE USER 'metasrv'@'%' IDENTIFIED BY '", kSqlPassword,
                    "'; GRANT ALL ON *.* TO 'metasrv'@'%'; CREATE DATABASE "
                    "metasrv;")}))
      << "creating the metasrv user failed";
}

std::string MariadbProcess::AddressWithPassword(
    const std::string& password) const {
  return absl::StrCat("mysql://metasrv:", password, "@127.0.0.1:", port_,
                      "/metasrv");
}

void MariadbProcess::Start() {
  std::vector<std::string> argv = {
      "/usr/sbin/mariadbd",
      "--no-defaults",
      "--datadir=" + dir_ + "/data",
      "--socket=" + dir_ + "/sock",
      "--pid-file=" + dir_ + "/pid",
      "--port=" + absl::StrCat(port_),
      "--bind-address=127.0.0.1",
      "--skip-name-resolve",
      "--log-error=" + dir_ + "/error.log",
      "--skip-log-bin",
      "--innodb-buffer-pool-size=16M",
      "--innodb-log-file-size=8M",
      "--innodb-flush-log-at-trx-commit=0"};
  if (tls_) {
    argv.push_back("--ssl-cert=" + dir_ + "/server.pem");
    argv.push_back("--ssl-key=" + dir_ + "/server.key");
  }
  Launch(argv);
}

}  // namespace metasrv::testing
