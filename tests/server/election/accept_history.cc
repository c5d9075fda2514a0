#include "tests/server/election/accept_history.h"

#include <algorithm>
#include <map>

namespace metasrv::testing {
namespace {

// How many move windows touch [from, to].
int MovesWithin(const std::vector<MoveWindow>& moves, absl::Time from,
                absl::Time to) {
  return static_cast<int>(std::count_if(
      moves.begin(), moves.end(),
      [&](const MoveWindow& m) { return m.begin <= to && m.end >= from; }));
}

}  // namespace

int CountInterleavedAccepts(const std::vector<ProbedAccept>& accepts,
                            const std::vector<MoveWindow>& moves) {
  // Per replica, its accepts in order (by sent, and so by answered too).
  std::map<int, std::vector<ProbedAccept>> by_replica;
  for (const ProbedAccept& a : accepts) by_replica[a.replica].push_back(a);
  for (auto& [replica, list] : by_replica) {
    std::sort(list.begin(), list.end(),
              [](const ProbedAccept& a, const ProbedAccept& b) {
                return a.sent < b.sent;
              });
  }
  int interleaved = 0;
  for (const ProbedAccept& y : accepts) {
    for (const auto& [replica, list] : by_replica) {
      if (replica == y.replica) continue;
      // x1: X's last accept answered before y was sent.
      auto after_x1 = std::partition_point(
          list.begin(), list.end(),
          [&](const ProbedAccept& x) { return x.answered < y.sent; });
      if (after_x1 == list.begin()) continue;
      // x2: X's first accept sent after y was answered.
      auto x2 = std::partition_point(
          after_x1, list.end(),
          [&](const ProbedAccept& x) { return x.sent <= y.answered; });
      if (x2 == list.end()) continue;
      const ProbedAccept& x1 = *std::prev(after_x1);
      if (MovesWithin(moves, x1.sent, x2->answered) < 2) ++interleaved;
    }
  }
  return interleaved;
}

}  // namespace metasrv::testing
