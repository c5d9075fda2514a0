// What the door adds to every call, part by part (Google Benchmark): the
// charge to the caller's host when it is accepted and its release when the
// call ends, the request deadline (an alarm set and cancelled, its
// completion taken off the queue), the leader admission by the method's
// row, and the charge of an answer to the host's share and the reply
// budget.
//
//   build/bench/door_bench --benchmark_repetitions=5 \
//       --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <grpcpp/alarm.h>
#include <grpcpp/completion_queue.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/leadership.h"
#include "server/rpc/method_table.h"
#include "server/rpc/call_ledger.h"
#include "server/rpc/reply_budget.h"

namespace metasrv::server {
namespace {

// Calls from 64 hosts, each with other calls open, as on a busy server.
void BM_LedgerEnterLeave(benchmark::State& state) {
  static CallLedger ledger({26214, 13107, 32 << 20, {}}, core::SystemClock());
  std::vector<std::string> peers;
  for (int i = 0; i < 64; ++i) {
    peers.push_back(absl::StrCat("ipv4:10.0.", i, ".", state.thread_index(),
                                 ":", 40000 + i));
  }
  size_t i = 0;
  for (auto _ : state) {
    auto ticket = ledger.Enter(peers[i++ & 63], CallKind::kUnary);
    benchmark::DoNotOptimize(ticket);
  }
}
BENCHMARK(BM_LedgerEnterLeave)->Threads(1)->Threads(2);

// The request deadline of one call whose request comes in time.
void BM_RequestDeadline(benchmark::State& state) {
  grpc::CompletionQueue cq;
  int tag_target = 0;
  for (auto _ : state) {
    grpc::Alarm alarm;
    alarm.Set(&cq, absl::ToChronoTime(absl::Now() + absl::Seconds(10)),
              &tag_target);
    alarm.Cancel();
    void* tag;
    bool ok;
    cq.Next(&tag, &ok);
    benchmark::DoNotOptimize(ok);
  }
  cq.Shutdown();
}
BENCHMARK(BM_RequestDeadline);

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
  auto ticket = ledger.Enter("ipv4:10.0.0.1:40000", CallKind::kUnary);
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
