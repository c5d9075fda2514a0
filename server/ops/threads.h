// Every thread the server starts, declared once (kThreads in threads.cc): its
// role, the name it carries (in /proc/<pid>/task/*/comm, `top -H`, gdb), the
// class that starts it, what it runs and when it stops. Each owner starts
// its threads through StartThread(), so a thread the table does not declare
// cannot be started; docs/ARCHITECTURE.md's thread table is checked against
// the table (scripts/check_thread_table.sh, ThreadTableTest).
//
// (gRPC's client library runs threads of its own for the etcd client and
// metasrvctl; they are not ours.)
#ifndef METASRV_SERVER_OPS_THREADS_H_
#define METASRV_SERVER_OPS_THREADS_H_

#include <cstdint>
#include <functional>
#include <thread>

#include "absl/types/span.h"

namespace metasrv::server {

enum class ThreadRole {
  kTransportLoop,   // rpc/h2_loop: one per --transport_threads.
  kAcceptor,        // rpc/h2_transport: its accept thread.
  kReadWorker,      // rpc/read_executor: one per --read_threads.
  kWatchPublisher,  // watch/flow_state_watch.
  kHttp,            // ops/http_server.
  kNodeExpirer,     // ops/node_expirer.
  kTlsRefresh,      // ops/tls_identity.
  kEtcdSession,     // election/etcd_election.
  kEtcdCampaign,    // election/etcd_election, one per session.
  kEtcdObserve,     // election/etcd_election.
  kEtcdPeers,       // election/etcd_election.
  kLeaseSession,    // election/lease_election (PostgreSQL, MySQL).
};

// One row of the table.
struct ThreadRow {
  ThreadRole role;
  const char* name;   // At most 15 characters; a pool's add "-N" to theirs.
  const char* owner;  // The class that starts and joins it.
  const char* runs;   // What it does.
  const char* stops;  // When it is joined, in the server's stop order.
};

// The rows, in the order the server stops them.
absl::Span<const ThreadRow> ThreadTable();

// Starts `run` on a thread that names itself after `role` ("name", or
// "name-index" for a pool's `index` >= 0) before it runs anything. The
// caller owns (joins) the thread.
std::thread StartThread(ThreadRole role, std::function<void()> run,
                        int index = -1);

// When the last thread of `role` to end ended, as a count of the threads
// StartThread started that had ended by then (0: none has). Thread-safe.
// What tests read the stop order by.
uint64_t LastEndOf(ThreadRole role);

}  // namespace metasrv::server

#endif  // METASRV_SERVER_OPS_THREADS_H_
