// The door on its own, without gRPC: what it charges a call to its host,
// the bounds, the admin token with its back-off on a manual clock, the reply
// charge (the host's share, then the budget), and the leader policy.
#include "server/rpc/call_door.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "core/clock.h"
#include "gtest/gtest.h"
#include "server/rpc/peer_address.h"
#include "tests/server/rpc/runtime_fixture.h"

namespace metasrv::server {
namespace {

// A peer written as gRPC writes it ("ipv4:10.1.1.1:5", "ipv6:[::1]:5"),
// taken as the transport takes it at accept (PeerOf).
PeerAddress DoorPeer(absl::string_view text) {
  sockaddr_storage addr{};
  const size_t colon = text.rfind(':');
  const auto port = static_cast<uint16_t>(
      std::stoi(std::string(text.substr(colon + 1))));
  std::string ip(text.substr(5, colon - 5));
  if (absl::StartsWith(text, "ipv4:")) {
    auto& in = reinterpret_cast<sockaddr_in&>(addr);
    in.sin_family = AF_INET;
    in.sin_port = htons(port);
    EXPECT_EQ(inet_pton(AF_INET, ip.c_str(), &in.sin_addr), 1) << text;
  } else {
    ip = ip.substr(1, ip.size() - 2);  // Its brackets.
    auto& in6 = reinterpret_cast<sockaddr_in6&>(addr);
    in6.sin6_family = AF_INET6;
    in6.sin6_port = htons(port);
    EXPECT_EQ(inet_pton(AF_INET6, ip.c_str(), &in6.sin6_addr), 1) << text;
  }
  return PeerOf(addr, 32);
}

constexpr char kToken[] = "0123456789abcdef0123";

class CallDoorTest : public ::testing::Test {
 protected:
  CallDoorTest() {
    options_.max_reply_bytes_in_flight = 1000;
    options_.peers.max_calls = 4;
    options_.peers.max_calls_per_peer = 2;
    options_.peers.max_reply_bytes_per_peer = 600;
    options_.auth_backoff.free_failures = 1;
    options_.auth_backoff.first_wait = absl::Seconds(2);
    leadership_.term.leading = true;
    leadership_.term.state_term = 7;
  }
  CallDoor MakeDoor(AdminAuth auth = AdminAuth()) {
    return CallDoor(&leadership_, std::move(auth), options_, &clock_, nullptr);
  }
  // Enters a call of `method` from `peer`; the ticket, or the refusal.
  static absl::Status Enter(CallDoor& door, Method method,
                            absl::string_view peer,
                            std::optional<CallLedger::Ticket>* ticket,
                            absl::string_view authorization = "") {
    return door.Enter(RowOf(method), DoorPeer(peer), authorization, ticket);
  }

  DoorOptions options_;
  core::ManualClock clock_;
  TestLeadership leadership_;
};

TEST_F(CallDoorTest, ACallIsChargedToItsHostUntilItsTicketGoes) {
  CallDoor door = MakeDoor();
  std::optional<CallLedger::Ticket> a1, a2, a3, b1;
  EXPECT_TRUE(Enter(door, Method::kRange, "ipv4:127.0.0.2:1000", &a1).ok());
  EXPECT_TRUE(Enter(door, Method::kRange, "ipv4:127.0.0.2:1001", &a2).ok());
  // The host's bound: another port of the same host is the same host.
  absl::Status third = Enter(door, Method::kRange, "ipv4:127.0.0.2:1002", &a3);
  EXPECT_EQ(third.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_FALSE(a3.has_value());  // Nothing charged.
  EXPECT_TRUE(Enter(door, Method::kRange, "ipv4:127.0.0.3:1000", &b1).ok());
  EXPECT_EQ(door.ledger().open_calls(), 3);
  a1.reset();  // The call went: its host may open another.
  EXPECT_TRUE(Enter(door, Method::kRange, "ipv4:127.0.0.2:1002", &a3).ok());
  EXPECT_EQ(door.ledger().open_calls(), 3);
}

TEST_F(CallDoorTest, TheGlobalBoundRefusesEveryHost) {
  CallDoor door = MakeDoor();
  std::vector<std::optional<CallLedger::Ticket>> tickets(5);
  for (int i = 0; i < 4; ++i) {
    const std::string peer = "ipv4:127.0.1." + std::to_string(i) + ":9";
    ASSERT_TRUE(Enter(door, Method::kHeartbeat, peer, &tickets[i]).ok());
  }
  absl::Status fifth =
      Enter(door, Method::kHeartbeat, "ipv4:127.0.0.1:9", &tickets[4]);
  EXPECT_EQ(fifth.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(fifth.message().find("max_calls"), std::string::npos)
      << fifth.message();
}

TEST_F(CallDoorTest, AnAdminCallNeedsTheTokenAndAWrongOneIsAnsweredLate) {
  options_.auth_backoff.failed_answers_per_second = 0;  // The host's alone.
  CallDoor door = MakeDoor(*AdminAuth::FromToken(kToken, "test"));
  const std::string right = std::string("Bearer ") + kToken;
  std::optional<CallLedger::Ticket> t;
  EXPECT_TRUE(
      Enter(door, Method::kLeaderChange, "ipv4:10.1.1.1:5", &t, right).ok());
  t.reset();
  // A call that is not an admin call needs no token.
  EXPECT_TRUE(Enter(door, Method::kGetFlowState, "ipv4:10.1.1.1:5", &t).ok());
  t.reset();
  absl::Time at = absl::InfinitePast();
  EXPECT_EQ(
      door.Enter(RowOf(Method::kLeaderChange), DoorPeer("ipv4:10.1.1.1:5"), "",
                 &t, &at)
          .code(),
      absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(at, door.Now());  // The first failure is free: answered now.
  // A refused call still holds its charge while it lives.
  EXPECT_TRUE(t.has_value());
  t.reset();
  // The second is answered 2 s late.
  EXPECT_EQ(door.Enter(RowOf(Method::kForgetFlows), DoorPeer("ipv4:10.1.1.1:6"),
                       "Bearer wrong-token-wrong-token", &t, &at)
                .code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(at, door.Now() + absl::Seconds(2));
  t.reset();
  // Meanwhile the right token from the same host is checked, and works.
  EXPECT_TRUE(
      Enter(door, Method::kLeaderChange, "ipv4:10.1.1.1:7", &t, right).ok());
  t.reset();
  // And from another host.
  EXPECT_TRUE(
      Enter(door, Method::kLeaderChange, "ipv4:10.1.1.2:5", &t, right).ok());
}

TEST_F(CallDoorTest, WithoutATokenAdminIsLoopbackOnly) {
  CallDoor door = MakeDoor();
  std::optional<CallLedger::Ticket> t;
  EXPECT_TRUE(Enter(door, Method::kForgetNodes, "ipv4:127.0.0.1:5", &t).ok());
  t.reset();
  EXPECT_TRUE(Enter(door, Method::kForgetNodes, "ipv6:[::1]:5", &t).ok());
  t.reset();
  EXPECT_EQ(Enter(door, Method::kForgetNodes, "ipv4:10.0.0.1:5", &t).code(),
            absl::StatusCode::kPermissionDenied);
}

TEST_F(CallDoorTest, AnAnswerIsChargedToItsHostsShareThenTheBudget) {
  CallDoor door = MakeDoor();
  std::optional<CallLedger::Ticket> a, b, c;
  ASSERT_TRUE(Enter(door, Method::kRange, "ipv4:127.0.0.2:1", &a).ok());
  ASSERT_TRUE(Enter(door, Method::kRange, "ipv4:127.0.0.3:1", &b).ok());
  ASSERT_TRUE(Enter(door, Method::kRange, "ipv4:127.0.0.4:1", &c).ok());
  EXPECT_TRUE(door.TakeReply(RowOf(Method::kRange), &*a, 500).ok());
  // Past the host's share (600): refused, nothing taken.
  EXPECT_EQ(door.TakeReply(RowOf(Method::kRange), &*a, 200).code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(door.replies().used(), 500u);
  EXPECT_TRUE(door.TakeReply(RowOf(Method::kRange), &*b, 450).ok());
  // Within c's share, past the budget (1000): refused, its share given back.
  absl::Status over = door.TakeReply(RowOf(Method::kRange), &*c, 100);
  EXPECT_EQ(over.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(c->peer_reply_bytes(), 0u);
  // Larger than a share: it could never fit.
  EXPECT_EQ(door.TakeReply(RowOf(Method::kRange), &*c, 601).code(),
            absl::StatusCode::kFailedPrecondition);
  door.GiveReply(&*a, 500);
  EXPECT_EQ(door.replies().used(), 450u);
  EXPECT_EQ(a->peer_reply_bytes(), 0u);
  EXPECT_TRUE(door.TakeReply(RowOf(Method::kRange), &*c, 100).ok());
  // No ticket (a call no door charged): the budget alone.
  EXPECT_TRUE(door.TakeReply(RowOf(Method::kRange), nullptr, 50).ok());
  EXPECT_EQ(door.replies().used(), 600u);
}

// A heartbeat's, AskLeader's or health's answer is counted but never refused
// for room that other calls' unread answers hold.
TEST_F(CallDoorTest, AnAlwaysAnsweredMethodIsChargedButNeverRefused) {
  CallDoor door = MakeDoor();
  std::optional<CallLedger::Ticket> a, b;
  ASSERT_TRUE(Enter(door, Method::kRange, "ipv4:127.0.0.2:1", &a).ok());
  ASSERT_TRUE(Enter(door, Method::kHeartbeat, "ipv4:127.0.0.2:2", &b).ok());
  ASSERT_TRUE(door.TakeReply(RowOf(Method::kRange), &*a, 600).ok());
  EXPECT_FALSE(door.TakeReply(RowOf(Method::kRange), &*a, 10).ok());
  for (Method method : {Method::kHeartbeat, Method::kAskLeader,
                        Method::kHealthCheck, Method::kHealthWatch}) {
    EXPECT_TRUE(RowOf(method).always_answered);
    EXPECT_TRUE(door.TakeReply(RowOf(method), &*b, 20).ok());
  }
  EXPECT_EQ(b->peer_reply_bytes(), 680u);  // The host's, counted.
  EXPECT_EQ(door.replies().used(), 680u);
  for (int i = 0; i < 4; ++i) door.GiveReply(&*b, 20);
  EXPECT_EQ(door.replies().used(), 600u);
  EXPECT_FALSE(RowOf(Method::kGetFlowState).always_answered);
  EXPECT_FALSE(RowOf(Method::kReflectionV1).always_answered);
}

TEST_F(CallDoorTest, TheLeaderPolicyIsTheTables) {
  CallDoor door = MakeDoor();
  absl::StatusOr<Admission> serve = door.AdmitLeader(Method::kGetFlowState);
  ASSERT_TRUE(serve.ok());
  EXPECT_EQ(serve->kind, Admission::Kind::kServe);
  EXPECT_EQ(serve->state_term, 7u);
  leadership_.term.leading = false;
  EXPECT_EQ(door.AdmitLeader(Method::kGetFlowState).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(door.AdmitLeader(Method::kRange)->kind,
            Admission::Kind::kAnswerNotLeader);
  EXPECT_TRUE(door.AdmitLeader(Method::kAskLeader).ok());
}

}  // namespace
}  // namespace metasrv::server
