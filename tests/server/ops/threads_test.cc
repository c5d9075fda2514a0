// The thread table: every row fits Linux's 15-character thread names (a
// pool's numbers included), each role once; StartThread names the thread
// before it runs; a running server's threads carry the table's names and
// stop in the table's order.
#include "server/ops/threads.h"

#include <dirent.h>
#include <pthread.h>

#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "tests/server/in_process_server.h"
#include "tests/server/test_util.h"

namespace metasrv::server {
namespace {

// The names of this process's threads now.
std::multiset<std::string> ThreadNames() {
  std::multiset<std::string> names;
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return names;
  while (dirent* entry = readdir(dir)) {
    if (entry->d_name[0] == '.') continue;
    std::ifstream comm(std::string("/proc/self/task/") + entry->d_name +
                       "/comm");
    std::string name;
    std::getline(comm, name);
    names.insert(name);
  }
  closedir(dir);
  return names;
}

TEST(ThreadTableTest, EveryRowFitsAndEachRoleIsDeclaredOnce) {
  std::set<ThreadRole> roles;
  std::set<std::string> names;
  for (const ThreadRow& row : ThreadTable()) {
    EXPECT_TRUE(roles.insert(row.role).second) << row.name;
    EXPECT_TRUE(names.insert(row.name).second) << row.name;
    const bool pool = row.role == ThreadRole::kTransportLoop ||
                      row.role == ThreadRole::kReadWorker;
    // A pool's threads add "-N": room for up to 256 loops ("-255").
    EXPECT_LE(std::string(row.name).size() + (pool ? 4 : 0), 15u) << row.name;
    EXPECT_NE(std::string(row.owner), "");
    EXPECT_NE(std::string(row.stops), "");
  }
  EXPECT_EQ(roles.size(), 12u);
}

TEST(ThreadTableTest, AStartedThreadIsNamedBeforeItRuns) {
  std::string seen;
  std::thread t = StartThread(
      ThreadRole::kReadWorker,
      [&seen] {
        char name[16] = {};
        pthread_getname_np(pthread_self(), name, sizeof(name));
        seen = name;
      },
      7);
  t.join();
  EXPECT_EQ(seen, "read-7");
}

// A standalone server with the HTTP port: its threads are the table's.
TEST(ThreadTableTest, AServersThreadsCarryTheTablesNames) {
  // What ended before this server (other tests in this process).
  std::vector<uint64_t> earlier;
  for (const ThreadRow& row : ThreadTable()) {
    earlier.push_back(LastEndOf(row.role));
  }
  ServerOptions options = testing::LoopbackOptions();
  options.metrics_addr = "127.0.0.1:0";
  options.transport.threads = 2;
  options.reads.threads = 2;
  std::unique_ptr<MetasrvServer> server =
      testing::StartInProcess(std::move(options));
  ASSERT_NE(server, nullptr);
  // Each thread names itself as it starts: wait for them to have.
  const std::vector<std::string> expected = {
      "h2-loop-0", "h2-loop-1", "acceptor", "read-0",
      "read-1",    "watch-publish", "http"};
  auto all_named = [&] {
    const std::multiset<std::string> names = ThreadNames();
    for (const std::string& name : expected) {
      if (names.count(name) != 1) return false;
    }
    return true;
  };
  EXPECT_TRUE(testing::WaitFor(all_named));
  const std::multiset<std::string> names = ThreadNames();
  for (const std::string& name : expected) {
    EXPECT_EQ(names.count(name), 1u) << name;
  }
  server.reset();
  const std::multiset<std::string> after = ThreadNames();
  for (const char* name : {"h2-loop-0", "acceptor", "read-0", "http"}) {
    EXPECT_EQ(after.count(name), 0u) << name;
  }
  // They ended in the table's order: each role's last thread after the
  // last of every role above it.
  uint64_t before = 0;
  std::set<std::string> ended;
  for (size_t i = 0; i < ThreadTable().size(); ++i) {
    const ThreadRow& row = ThreadTable()[i];
    const uint64_t end = LastEndOf(row.role);
    if (end == earlier[i]) continue;  // A role this server does not run.
    ended.insert(row.name);
    EXPECT_GT(end, before) << row.name << " ended before a thread above it";
    before = end;
  }
  EXPECT_EQ(ended, (std::set<std::string>{"acceptor", "watch-publish",
                                          "h2-loop", "http", "read"}));
}

}  // namespace
}  // namespace metasrv::server
