// The peer ledger: hosts out of gRPC's peer strings, the bounds on calls in
// all and per host, the reply share, and many threads entering and leaving.
#include "server/rpc/peer_ledger.h"

#include <atomic>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace metasrv::server {
namespace {

TEST(PeerLedgerTest, AHostIsThePeerWithoutItsPort) {
  EXPECT_EQ(PeerLedger::HostOf("ipv4:10.0.0.1:5000"), "ipv4:10.0.0.1");
  EXPECT_EQ(PeerLedger::HostOf("ipv6:[::1]:5000"), "ipv6:[::1]");
  EXPECT_EQ(PeerLedger::HostOf("ipv6:%5B::1%5D:5000"), "ipv6:%5B::1%5D");
  EXPECT_EQ(PeerLedger::HostOf("unix:/run/metasrv.sock"), "unix");
  EXPECT_EQ(PeerLedger::HostOf("weird"), "weird");
}

TEST(PeerLedgerTest, CallsAreBoundedPerHostAndInAllAndGivenBack) {
  PeerLedger ledger({/*max_calls=*/5, /*max_calls_per_peer=*/3, 0});
  std::vector<PeerLedger::Ticket> held;
  for (int port = 1; port <= 3; ++port) {
    auto ticket = ledger.Enter(absl::StrCat("ipv4:10.0.0.1:", port));
    ASSERT_TRUE(ticket.ok());
    held.push_back(*std::move(ticket));
  }
  bool per_peer = false;
  auto refused = ledger.Enter("ipv4:10.0.0.1:9", &per_peer);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(refused.status().message().find("--max_calls_per_peer"),
            std::string::npos);
  EXPECT_TRUE(per_peer);
  // Another host has room, until the total bound.
  for (int port = 1; port <= 2; ++port) {
    auto ticket = ledger.Enter(absl::StrCat("ipv4:10.0.0.2:", port));
    ASSERT_TRUE(ticket.ok());
    held.push_back(*std::move(ticket));
  }
  auto full = ledger.Enter("ipv4:10.0.0.3:1", &per_peer);
  EXPECT_EQ(full.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(full.status().message().find("(--max_calls)"), std::string::npos);
  EXPECT_FALSE(per_peer);
  EXPECT_EQ(ledger.open_calls(), 5);
  EXPECT_EQ(ledger.peers(), 2u);
  held.clear();  // Every call ends: nothing is left of any host.
  EXPECT_EQ(ledger.open_calls(), 0);
  EXPECT_EQ(ledger.peers(), 0u);
  EXPECT_TRUE(ledger.Enter("ipv4:10.0.0.3:1").ok());
}

TEST(PeerLedgerTest, AHostsRepliesAreBoundedByItsShare) {
  PeerLedger ledger({0, 0, /*max_reply_bytes_per_peer=*/100});
  auto a1 = ledger.Enter("ipv4:10.0.0.1:1");
  auto a2 = ledger.Enter("ipv4:10.0.0.1:2");
  auto b = ledger.Enter("ipv4:10.0.0.2:1");
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

TEST(PeerLedgerTest, ManyThreadsEnterAndLeaveWithinTheBounds) {
  constexpr int kThreads = 8, kRounds = 2000;
  PeerLedger ledger({/*max_calls=*/16, /*max_calls_per_peer=*/4, 1000});
  std::atomic<int> admitted{0}, over{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kRounds; ++i) {
        auto ticket =
            ledger.Enter(absl::StrCat("ipv4:10.0.0.", (t + i) % 5, ":", i));
        if (!ticket.ok()) continue;
        admitted.fetch_add(1);
        if (ledger.open_calls() > 16) over.fetch_add(1);
        if (ticket->TakeReply(300)) ticket->GiveReply(300);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_GT(admitted.load(), 0);
  EXPECT_EQ(over.load(), 0);
  EXPECT_EQ(ledger.open_calls(), 0);
  EXPECT_EQ(ledger.peers(), 0u);
}

}  // namespace
}  // namespace metasrv::server
