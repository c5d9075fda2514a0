// What the door adds to every call, part by part (Google Benchmark): the
// whole admission at HEADERS (CallDoor::Enter of a read: the charge to the
// caller's host, the leader admission by the method's row) and the ticket's
// release when the call ends; the peer's address and host key as accept
// makes them once per connection (PeerOf: no longer part of any call's
// charge); the ledger's charge alone; the
// leader admission alone; and the charge of an answer to the host's share
// and the reply budget. The request deadline is no longer a part of its
// own: on the nghttp2 transport it is a field of the call that the loop's
// tick compares with the time (h2_connection.cc), where it was a
// completion-queue alarm set and cancelled per call on gRPC 1.51.
//
//   build/bench/door_bench --benchmark_repetitions=5
//       --benchmark_report_aggregates_only=true   (one command line)
#include <arpa/inet.h>
#include <benchmark/benchmark.h>
#include <netinet/in.h>

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/leadership.h"
#include "server/rpc/call_door.h"
#include "server/rpc/call_ledger.h"
#include "server/rpc/method_table.h"
#include "server/rpc/peer_address.h"
#include "server/rpc/reply_budget.h"

namespace metasrv::server {
namespace {

// Host 10.0.`i`.`thread`, port 40000 + `i`, as accept gives it.
PeerAddress BenchPeer(int i, int thread) {
  sockaddr_storage addr{};
  auto& in = reinterpret_cast<sockaddr_in&>(addr);
  in.sin_family = AF_INET;
  in.sin_port = htons(static_cast<uint16_t>(40000 + i));
  in.sin_addr.s_addr = htonl(0x0a000000u | static_cast<uint32_t>(i) << 8 |
                             static_cast<uint32_t>(thread & 255));
  return PeerOf(addr, 32);
}

// Calls from 64 hosts, each with other calls open, as on a busy server.
void BM_LedgerEnterLeave(benchmark::State& state) {
  static CallLedger ledger({26214, 13107, 32 << 20, {}}, core::SystemClock());
  std::vector<std::string> hosts;
  for (int i = 0; i < 64; ++i) {
    hosts.push_back(BenchPeer(i, state.thread_index()).host);
  }
  size_t i = 0;
  for (auto _ : state) {
    auto ticket = ledger.Enter(hosts[i++ & 63], CallKind::kUnary);
    benchmark::DoNotOptimize(ticket);
  }
}
BENCHMARK(BM_LedgerEnterLeave)->Threads(1)->Threads(2);

// A read's whole admission from 64 hosts and its ticket's release.
void BM_DoorEnterLeave(benchmark::State& state) {
  static const core::StandaloneLeadership leadership("127.0.0.1:3002");
  static CallDoor door(&leadership, AdminAuth(), DoorOptions(),
                       core::SystemClock(), nullptr);
  // Taken once at accept, as the transport does: no call parses them.
  std::vector<PeerAddress> peers;
  for (int i = 0; i < 64; ++i) peers.push_back(BenchPeer(i, state.thread_index()));
  const MethodRow& row = RowOf(Method::kGetFlowState);
  size_t i = 0;
  for (auto _ : state) {
    std::optional<CallLedger::Ticket> ticket;
    absl::Status entered = door.Enter(row, peers[i++ & 63], "", &ticket);
    benchmark::DoNotOptimize(entered);
  }
}
BENCHMARK(BM_DoorEnterLeave)->Threads(1)->Threads(2);

// A peer's address, text and host key, made once per connection at accept
// (no call pays it any more).
void BM_PeerOfAtAccept(benchmark::State& state) {
  sockaddr_storage addr{};
  auto& in = reinterpret_cast<sockaddr_in&>(addr);
  in.sin_family = AF_INET;
  in.sin_port = htons(40017);
  in.sin_addr.s_addr = htonl(0x0a001103u);
  for (auto _ : state) {
    PeerAddress peer = PeerOf(addr, 32);
    benchmark::DoNotOptimize(peer);
  }
}
BENCHMARK(BM_PeerOfAtAccept);

void BM_AdmitLeader(benchmark::State& state) {
  const core::StandaloneLeadership leadership("127.0.0.1:3002");
  for (auto _ : state) {
    auto admitted = AdmitLeader(Method::kGetFlowState, leadership);
    benchmark::DoNotOptimize(admitted);
  }
}
BENCHMARK(BM_AdmitLeader);

void BM_ReplyShareAndBudget(benchmark::State& state) {
  CallLedger ledger({0, 0, 32 << 20, {}}, core::SystemClock());
  ReplyBudget budget(128 << 20);
  auto ticket = ledger.Enter("ipv4:10.0.0.1", CallKind::kUnary);
  for (auto _ : state) {
    const bool taken = ticket->TakeReply(4096) && budget.TryTake(4096);
    benchmark::DoNotOptimize(taken);
    budget.Give(4096);
    ticket->GiveReply(4096);
  }
}
BENCHMARK(BM_ReplyShareAndBudget);

}  // namespace
}  // namespace metasrv::server

BENCHMARK_MAIN();
