#include "server/ops/threads.h"

#include <pthread.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <string>
#include <utility>

namespace metasrv::server {
namespace {

using R = ThreadRole;

// In the order MetasrvServer stops them (Shutdown, then Wait, then its
// members' destructors).
constexpr ThreadRow kThreads[] = {
    {R::kEtcdSession, "etcd-session", "EtcdElection",
     "the lease, its keep-alive and resignation", "1: election Stop()"},
    {R::kEtcdCampaign, "etcd-campaign", "EtcdElection",
     "one session's campaign", "1: with its session"},
    {R::kEtcdObserve, "etcd-observe", "EtcdElection",
     "who leads, from etcd's observe stream", "1: election Stop()"},
    {R::kEtcdPeers, "etcd-peers", "EtcdElection",
     "the peers' registered info", "1: election Stop()"},
    {R::kLeaseSession, "sql-lease", "LeaseElection",
     "the SQL lease: acquire, renew, poll", "1: election Stop()"},
    {R::kAcceptor, "acceptor", "H2Transport",
     "accept(), below the descriptor ceiling", "2: transport StopAccepting()"},
    {R::kNodeExpirer, "node-expirer", "NodeExpirer",
     "forgets nodes idle past their limits", "3: expirer Stop()"},
    {R::kWatchPublisher, "watch-publish", "WatchHub",
     "builds watch states, offers them in waves", "4: watch Stop()"},
    {R::kTransportLoop, "h2-loop", "H2Loop",
     "epoll: its connections, their calls", "5: transport Stop(), after the grace"},
    {R::kHttp, "http", "HttpServer",
     "/metrics, /health, /ready", "6: the server's destructor, after Wait()"},
    {R::kReadWorker, "read", "ReadExecutor",
     "large reads off the loops", "7: the executor's destructor"},
    {R::kTlsRefresh, "tls-refresh", "TlsIdentity",
     "reloads rotated certificates", "8: the identity's destructor"},
};

constexpr size_t kRoles = sizeof(kThreads) / sizeof(kThreads[0]);
std::atomic<uint64_t> ended{0};                    // Threads that ended.
std::array<std::atomic<uint64_t>, kRoles> last_end{};  // By ThreadRole.

}  // namespace

absl::Span<const ThreadRow> ThreadTable() { return kThreads; }

uint64_t LastEndOf(ThreadRole role) {
  return last_end[static_cast<size_t>(role)].load();
}

std::thread StartThread(ThreadRole role, std::function<void()> run,
                        int index) {
  std::string name = "thread";
  for (const ThreadRow& row : kThreads) {
    if (row.role == role) name = row.name;
  }
  if (index >= 0) name += "-" + std::to_string(index);
  name.resize(std::min<size_t>(name.size(), 15));  // Linux keeps 15.
  return std::thread([role, name = std::move(name), run = std::move(run)] {
    pthread_setname_np(pthread_self(), name.c_str());
    run();
    last_end[static_cast<size_t>(role)].store(++ended);
  });
}

}  // namespace metasrv::server
