#include "tests/server/election/accept_history.h"

#include "gtest/gtest.h"

namespace metasrv::testing {
namespace {

// Milliseconds after an arbitrary start.
absl::Time Ms(int ms) { return absl::UnixEpoch() + absl::Milliseconds(ms); }

ProbedAccept Accept(int replica, int sent_ms, int answered_ms) {
  return {Ms(sent_ms), Ms(answered_ms), replica};
}

TEST(AcceptHistoryTest, AHandoverWithALateAnswerIsNotInterleaved) {
  // Replica 0 accepted a request whose answer reached its prober late, after
  // replica 1 (leading since the move at 20-30 ms) had answered several.
  const std::vector<ProbedAccept> accepts = {
      Accept(0, 0, 5),   Accept(0, 6, 90),  Accept(1, 35, 36),
      Accept(1, 37, 38), Accept(1, 39, 40), Accept(1, 95, 96)};
  EXPECT_EQ(CountInterleavedAccepts(accepts, {{Ms(20), Ms(30)}}), 0);
}

TEST(AcceptHistoryTest, AnOldLeaderStillAcceptingIsCaught) {
  // Replica 0 goes on accepting after the move that made replica 1 lead.
  const std::vector<ProbedAccept> accepts = {
      Accept(0, 0, 1), Accept(1, 12, 13), Accept(0, 14, 15), Accept(1, 16, 17),
      Accept(0, 18, 19)};
  // Each of the middle three lies between two accepts of the other replica.
  EXPECT_EQ(CountInterleavedAccepts(accepts, {{Ms(5), Ms(10)}}), 3);
}

TEST(AcceptHistoryTest, TwoLeadersOutsideAnyMoveAreCaught) {
  const std::vector<ProbedAccept> accepts = {
      Accept(0, 100, 101), Accept(2, 102, 103), Accept(0, 104, 105)};
  EXPECT_EQ(CountInterleavedAccepts(accepts, {{Ms(0), Ms(10)}}), 1);
}

TEST(AcceptHistoryTest, LeadershipThatReturnsAfterTwoMovesIsNotInterleaved) {
  const std::vector<ProbedAccept> accepts = {Accept(0, 0, 1), Accept(1, 20, 21),
                                             Accept(0, 40, 41)};
  EXPECT_EQ(CountInterleavedAccepts(accepts, {{Ms(5), Ms(10)}}), 1);
  EXPECT_EQ(
      CountInterleavedAccepts(accepts, {{Ms(5), Ms(10)}, {Ms(25), Ms(30)}}), 0);
}

}  // namespace
}  // namespace metasrv::testing
