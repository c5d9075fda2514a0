// The call ledger: hosts out of gRPC's peer strings, the bounds in all, per
// host and per kind with max-min fairness (a host under its share gets in
// by ending the longest-idle call of the host holding the most), ending
// calls of a kind and silent ones, the reply share, and many threads.
#include "server/rpc/call_ledger.h"

#include <atomic>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace metasrv::server {
namespace {

constexpr int kHeartbeat = static_cast<int>(CallKind::kHeartbeat);

// A call that records how it was told to end.
struct Ended final : AbortableCall {
  void Abort(const absl::Status& status) override {
    ++told;
    last = status;
  }
  int told = 0;
  absl::Status last;
};

// Tickets held, each with its call attached.
struct Held {
  std::vector<std::optional<CallLedger::Ticket>> tickets;
  std::vector<std::unique_ptr<Ended>> calls;
  void Add(CallLedger::Ticket ticket) {
    calls.push_back(std::make_unique<Ended>());
    EXPECT_TRUE(ticket.Attach(calls.back().get()).ok());
    tickets.emplace_back(std::move(ticket));
  }
};

// Enters `n` heartbeat streams from 10.0.0.1 (one host behind a NAT, say),
// each told to send every second (so live while touched within two) and
// silent past 4 s, into `nat`.
void AddToldStreams(CallLedger& ledger, int n, Held* nat) {
  for (int i = 0; i < n; ++i) {
    auto stream =
        ledger.Enter("ipv4:10.0.0.1", CallKind::kHeartbeat);
    ASSERT_TRUE(stream.ok());
    nat->Add(*std::move(stream));
    nat->tickets.back()->SetTold(absl::Seconds(1), absl::Seconds(4));
  }
}

TEST(CallLedgerTest, AFixedCapPerHostAndTheTotalBoundHoldWithoutIdleCalls) {
  core::ManualClock clock;
  CallLedger ledger({/*max_calls=*/5, /*max_calls_per_peer=*/3, 0, {}}, &clock);
  std::vector<CallLedger::Ticket> held;  // Unary calls: none can be ended.
  for (int port = 1; port <= 3; ++port) {
    auto ticket =
        ledger.Enter("ipv4:10.0.0.1", CallKind::kUnary);
    ASSERT_TRUE(ticket.ok());
    held.push_back(*std::move(ticket));
  }
  EnterNote note;
  auto refused = ledger.Enter("ipv4:10.0.0.1", CallKind::kUnary, &note);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(refused.status().message().find("--max_calls_per_peer"),
            std::string::npos);
  EXPECT_EQ(note.why, EnterNote::Refusal::kPeerCalls);
  for (int port = 1; port <= 2; ++port) {
    auto ticket =
        ledger.Enter("ipv4:10.0.0.2", CallKind::kUnary);
    ASSERT_TRUE(ticket.ok());
    held.push_back(*std::move(ticket));
  }
  // Host 1 holds 3 of 5, over a third; but none of its calls is idle (all
  // unary, in progress), so a third host is refused, not let in.
  auto full = ledger.Enter("ipv4:10.0.0.3", CallKind::kUnary, &note);
  EXPECT_EQ(full.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(full.status().message().find("(--max_calls)"), std::string::npos);
  EXPECT_NE(full.status().message().find("its fair share is 1"),
            std::string::npos);
  EXPECT_EQ(note.why, EnterNote::Refusal::kCalls);
  EXPECT_FALSE(note.made_room);
  EXPECT_EQ(ledger.open_calls(), 5);
  EXPECT_EQ(ledger.open(CallKind::kUnary), 5u);
  EXPECT_EQ(ledger.peers(), 2u);
  held.clear();  // Every call ends: nothing is left of any host.
  EXPECT_EQ(ledger.open_calls(), 0);
  EXPECT_EQ(ledger.peers(), 0u);
  EXPECT_TRUE(ledger.Enter("ipv4:10.0.0.3", CallKind::kUnary).ok());
}

TEST(CallLedgerTest, AHostUnderItsShareTakesTheLongestIdleCallOfTheLargest) {
  core::ManualClock clock;
  CallLedger ledger({/*max_calls=*/8, 0, 0, {}}, &clock);
  // One host takes the whole bound while nobody else wants room.
  Held a;
  for (int i = 0; i < 8; ++i) {
    auto ticket =
        ledger.Enter("ipv4:127.0.0.2", CallKind::kHeartbeat);
    ASSERT_TRUE(ticket.ok()) << ticket.status();
    a.Add(*std::move(ticket));
    clock.Advance(absl::Seconds(1));
  }
  a.tickets[0]->Touch();  // Its first call is active again: not the idlest.
  // A second host asks: its share is 4, it holds none; the first host's
  // longest-idle call (its second) is ended for it.
  EnterNote note;
  auto b1 = ledger.Enter("ipv4:127.0.0.1", CallKind::kHeartbeat, &note);
  ASSERT_TRUE(b1.ok()) << b1.status();
  EXPECT_TRUE(note.made_room);
  EXPECT_EQ(note.cut_host, "ipv4:127.0.0.2");
  EXPECT_EQ(a.calls[0]->told, 0);
  EXPECT_EQ(a.calls[1]->told, 1);
  EXPECT_EQ(a.calls[1]->last.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(a.calls[1]->last.message().find("fair share of 4"),
            std::string::npos);
  EXPECT_EQ(ledger.evicted(), 1u);
  // Until that call is gone the ledger is one over: the next asker makes
  // room again, from the idlest call not yet told.
  auto b2 = ledger.Enter("ipv4:127.0.0.1", CallKind::kHeartbeat);
  ASSERT_TRUE(b2.ok());
  EXPECT_EQ(a.calls[2]->told, 1);
  EXPECT_EQ(ledger.open_calls(), 10);
  // The told calls go (their streams ended).
  a.tickets[1].reset();
  a.tickets[2].reset();
  EXPECT_EQ(ledger.open_calls(), 8);
  // The second host grows to its share of 4, and no further.
  std::vector<CallLedger::Ticket> b;
  b.push_back(*std::move(b1));
  b.push_back(*std::move(b2));
  for (int i = 3; i <= 4; ++i) {
    auto ticket =
        ledger.Enter("ipv4:127.0.0.1", CallKind::kHeartbeat);
    ASSERT_TRUE(ticket.ok()) << ticket.status();
    b.push_back(*std::move(ticket));
  }
  EXPECT_EQ(ledger.evicted(), 4u);
  auto over = ledger.Enter("ipv4:127.0.0.1", CallKind::kHeartbeat, &note);
  EXPECT_EQ(over.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(over.status().message().find("this host holds 4, its fair share 4"),
            std::string::npos)
      << over.status();
}

TEST(CallLedgerTest, EachKindIsBoundedFairlyToo) {
  core::ManualClock clock;
  PeerLimits limits;
  limits.max_open[kHeartbeat] = 4;
  CallLedger ledger(limits, &clock);
  Held a;
  for (int i = 0; i < 4; ++i) {
    auto ticket =
        ledger.Enter("ipv4:127.0.0.9", CallKind::kHeartbeat);
    ASSERT_TRUE(ticket.ok());
    a.Add(*std::move(ticket));
    clock.Advance(absl::Seconds(1));
  }
  // Other kinds are not held to it.
  EXPECT_TRUE(ledger.Enter("ipv4:127.0.0.9", CallKind::kUnary).ok());
  EnterNote note;
  auto b = ledger.Enter("ipv4:127.0.0.1", CallKind::kHeartbeat, &note);
  ASSERT_TRUE(b.ok());
  EXPECT_TRUE(note.made_room);
  EXPECT_EQ(a.calls[0]->told, 1);  // The longest idle.
  EXPECT_NE(a.calls[0]->last.message().find("heartbeat stream"),
            std::string::npos);
}

// Issue 59: flownodes behind one address (a NAT), each on a stream at its
// cadence, are never ended for another host: the next host over its share
// with an idle call gives one back instead; once silent, they may go.
TEST(CallLedgerTest, LiveHeartbeatStreamsAreNeverEndedForAnotherHost) {
  core::ManualClock clock;
  CallLedger ledger({/*max_calls=*/7, 0, 0, {}}, &clock);
  Held nat, idle;
  AddToldStreams(ledger, 4, &nat);
  for (int i = 0; i < 3; ++i) {
    auto held =
        ledger.Enter("ipv4:10.0.0.2", CallKind::kUnary);
    ASSERT_TRUE(held.ok());
    idle.Add(*std::move(held));
  }
  clock.Advance(absl::Milliseconds(1500));
  for (auto& ticket : nat.tickets) ticket->Touch();  // At their cadence.
  // A third host: share 2; the NAT holds 4 but all live, the idle host 3.
  EnterNote note;
  auto in = ledger.Enter("ipv4:10.0.0.3", CallKind::kUnary, &note);
  ASSERT_TRUE(in.ok()) << in.status();
  EXPECT_EQ(note.cut_host, "ipv4:10.0.0.2");
  int told = 0;
  for (const auto& call : idle.calls) told += call->told;
  EXPECT_EQ(told, 1);
  for (const auto& call : nat.calls) EXPECT_EQ(call->told, 0);
  // The NAT's streams fall silent: past two intervals they may be ended,
  // the host holding the most first (share 1 now).
  clock.Advance(absl::Milliseconds(2001));
  EnterNote later;
  auto next = ledger.Enter("ipv4:10.0.0.4", CallKind::kUnary, &later);
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ(later.cut_host, "ipv4:10.0.0.1");
}

absl::Status Silent(absl::Duration limit) {
  return absl::DeadlineExceededError(
      absl::StrCat("silent for ", absl::FormatDuration(limit)));
}

// Each call is silent past its own limit: a frontend told 18 s keeps its
// stream at 13 s of silence, where a flownode's default of 12 s ends.
TEST(CallLedgerTest, EachCallIsSilentPastItsOwnLimit) {
  core::ManualClock clock;
  CallLedger ledger({}, &clock);
  Held held;
  for (int i = 0; i < 3; ++i) {
    auto ticket = ledger.Enter("ipv4:127.0.0.1", CallKind::kHeartbeat);
    ASSERT_TRUE(ticket.ok());
    held.Add(*std::move(ticket));
  }
  held.tickets[0]->SetTold(absl::Seconds(18), absl::Seconds(57));
  held.tickets[1]->SetTold(absl::Seconds(1), absl::Seconds(4));
  clock.Advance(absl::Seconds(5));
  EXPECT_EQ(ledger.AbortSilent(CallKind::kHeartbeat, absl::Seconds(12), Silent),
            1);
  EXPECT_EQ(held.calls[1]->told, 1);
  EXPECT_EQ(held.calls[1]->last.message(), "silent for 4s");
  clock.Advance(absl::Seconds(8));  // 13 s.
  EXPECT_EQ(ledger.AbortSilent(CallKind::kHeartbeat, absl::Seconds(12), Silent),
            1);
  EXPECT_EQ(held.calls[2]->last.message(), "silent for 12s");
  EXPECT_EQ(held.calls[0]->told, 0);
  clock.Advance(absl::Seconds(44));  // 57 s: the limit itself is not past.
  EXPECT_EQ(ledger.AbortSilent(CallKind::kHeartbeat, absl::Seconds(12), Silent),
            0);
  held.tickets[0]->Touch();  // A heartbeat: silent from now on.
  clock.Advance(absl::Seconds(57) + absl::Milliseconds(1));
  EXPECT_EQ(ledger.AbortSilent(CallKind::kHeartbeat, absl::Seconds(12), Silent),
            1);
  EXPECT_EQ(held.calls[0]->last.message(), "silent for 57s");
}

TEST(CallLedgerTest, SilentCallsOfAKindAreEndedAndClosedKindsRefused) {
  core::ManualClock clock;
  CallLedger ledger({}, &clock);
  Held held;
  for (CallKind kind :
       {CallKind::kHeartbeat, CallKind::kHeartbeat, CallKind::kWatch}) {
    auto ticket = ledger.Enter("ipv4:127.0.0.1", kind);
    ASSERT_TRUE(ticket.ok());
    held.Add(*std::move(ticket));
  }
  clock.Advance(absl::Seconds(10));
  held.tickets[1]->Touch();
  clock.Advance(absl::Seconds(3));
  EXPECT_EQ(ledger.AbortSilent(CallKind::kHeartbeat, absl::Seconds(12), Silent),
            1);
  EXPECT_EQ(held.calls[0]->told, 1);
  EXPECT_EQ(held.calls[1]->told, 0);  // Touched 3 s ago.
  EXPECT_EQ(held.calls[2]->told, 0);  // Another kind.
  // Told once only.
  EXPECT_EQ(ledger.AbortSilent(CallKind::kHeartbeat, absl::Seconds(12), Silent),
            0);
  ledger.AbortAll(CallKind::kWatch, absl::AbortedError("stepped down"));
  EXPECT_EQ(held.calls[2]->told, 1);
  ledger.Close(CallKind::kHeartbeat, absl::UnavailableError("shutting down"));
  EXPECT_EQ(held.calls[1]->told, 1);
  auto late = ledger.Enter("ipv4:127.0.0.1", CallKind::kHeartbeat);
  ASSERT_TRUE(late.ok());  // Charged; but it cannot be attached.
  Ended call;
  EXPECT_EQ(late->Attach(&call).code(), absl::StatusCode::kUnavailable);
  // A detached call is not told.
  held.tickets[2]->Detach(held.calls[1].get());  // Not the one attached.
  held.tickets[2]->Detach(held.calls[2].get());
  ledger.AbortAll(CallKind::kWatch, absl::AbortedError("again"));
  EXPECT_EQ(held.calls[2]->told, 1);
}

TEST(CallLedgerTest, AHostsRepliesAreBoundedByItsShare) {
  CallLedger ledger({0, 0, /*max_reply_bytes_per_peer=*/100, {}},
                    core::SystemClock());
  auto a1 = ledger.Enter("ipv4:10.0.0.1", CallKind::kUnary);
  auto a2 = ledger.Enter("ipv4:10.0.0.1", CallKind::kUnary);
  auto b = ledger.Enter("ipv4:10.0.0.2", CallKind::kUnary);
  ASSERT_TRUE(a1.ok() && a2.ok() && b.ok());
  EXPECT_TRUE(a1->TakeReply(60));
  // The share is the host's, over all its calls and connections.
  EXPECT_FALSE(a2->TakeReply(41));
  EXPECT_TRUE(a2->TakeReply(40));
  EXPECT_EQ(a1->peer_reply_bytes(), 100u);
  EXPECT_TRUE(b->TakeReply(100));  // Another host's share is its own.
  a1->GiveReply(60);
  EXPECT_TRUE(a2->TakeReply(60));
}

// With the reply budget full, a host under its share of it gets room: the
// longest-idle call with an unread answer is ended, of the host holding the
// most bytes that has one; a host whose calls are all live heartbeat
// streams is passed over for the next.
TEST(CallLedgerTest, ReplyRoomWalksHostsUntilOneHasAnIdleCallToEnd) {
  core::ManualClock clock;
  CallLedger ledger({0, 0, 0, {}}, &clock);
  Held nat, idle;
  AddToldStreams(ledger, 4, &nat);
  for (auto& ticket : nat.tickets) ticket->ChargeReply(50);
  for (int i = 0; i < 2; ++i) {
    auto unary =
        ledger.Enter("ipv4:10.0.0.2", CallKind::kUnary);
    ASSERT_TRUE(unary.ok());
    idle.Add(*std::move(unary));
  }
  idle.tickets[0]->ChargeReply(150);  // The other has no answer in flight.
  auto asker = ledger.Enter("ipv4:10.0.0.3", CallKind::kUnary);
  ASSERT_TRUE(asker.ok());
  clock.Advance(absl::Milliseconds(1500));
  for (auto& ticket : nat.tickets) ticket->Touch();  // At their cadence.
  // Budget 300 over three hosts: shares of 100; the NAT holds 200, all
  // live; the idle host 150.
  EnterNote note;
  ASSERT_TRUE(ledger.MakeReplyRoom(*asker, 300, &note));
  EXPECT_EQ(note.cut_host, "ipv4:10.0.0.2");
  EXPECT_NE(note.cut_reason.find("150 bytes of unread answers"),
            std::string::npos)
      << note.cut_reason;
  EXPECT_EQ(idle.calls[0]->told, 1);
  EXPECT_EQ(idle.calls[1]->told, 0);  // Nothing unread: not a victim.
  for (const auto& call : nat.calls) EXPECT_EQ(call->told, 0);
  EXPECT_EQ(ledger.evicted(), 1u);
  // Once its share is held, the asker gets no more room.
  asker->ChargeReply(100);
  EnterNote none;
  EXPECT_FALSE(ledger.MakeReplyRoom(*asker, 300, &none));
  EXPECT_FALSE(none.made_room);
}

TEST(CallLedgerTest, ManyThreadsEnterEvictAndLeaveWithinTheBounds) {
  constexpr int kThreads = 8, kRounds = 2000;
  CallLedger ledger({/*max_calls=*/16, /*max_calls_per_peer=*/8, 1000, {}},
                    core::SystemClock());
  std::atomic<int> admitted{0}, over{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::deque<std::pair<CallLedger::Ticket, std::unique_ptr<Ended>>> mine;
      for (int i = 0; i < kRounds; ++i) {
        auto ticket =
            ledger.Enter(absl::StrCat("ipv4:10.0.0.", (t + i) % 5),
                         CallKind::kHeartbeat);
        if (ticket.ok()) {
          admitted.fetch_add(1);
          auto call = std::make_unique<Ended>();
          EXPECT_TRUE(ticket->Attach(call.get()).ok());
          if (ticket->TakeReply(300)) ticket->GiveReply(300);
          mine.emplace_back(*std::move(ticket), std::move(call));
        }
        // Evictions in flight let calls in over the bound, never by more
        // than the ledger's cap on them.
        if (ledger.open_calls() > 16 + 64) over.fetch_add(1);
        if (mine.size() > 2 || (!mine.empty() && i % 3 == 0)) {
          mine.front().first.Detach(mine.front().second.get());
          mine.pop_front();
        }
      }
      for (auto& [ticket, call] : mine) ticket.Detach(call.get());
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_GT(admitted.load(), kThreads * kRounds / 4);
  EXPECT_EQ(over.load(), 0);
  EXPECT_EQ(ledger.open_calls(), 0);
  EXPECT_EQ(ledger.peers(), 0u);
}

}  // namespace
}  // namespace metasrv::server
