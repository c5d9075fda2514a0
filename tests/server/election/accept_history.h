// What probers saw of the replicas' accepts while a test moved leadership,
// and the check that no two replicas led at once.
#ifndef METASRV_TESTS_SERVER_ELECTION_ACCEPT_HISTORY_H_
#define METASRV_TESTS_SERVER_ELECTION_ACCEPT_HISTORY_H_

#include <vector>

#include "absl/time/time.h"

namespace metasrv::testing {

// A heartbeat a replica accepted: it led at some instant in [sent, answered].
// One prober per replica sends one request at a time, so a replica's accepts
// do not overlap one another.
struct ProbedAccept {
  absl::Time sent;      // Before the request left the prober.
  absl::Time answered;  // After its answer reached the prober.
  int replica;          // Which replica accepted.
};

// A span in which the test let leadership move once: a LeaderChange until
// the next leader was seen leading, the store paused until a leader was back,
// or the start of the test until the first leader was seen.
struct MoveWindow {
  absl::Time begin;  // Before the move was caused.
  absl::Time end;    // After the new leader (or none) was seen.
};

// The number of accepts that prove two replicas led at the same time: an
// accept y of replica Y lying between two accepts x1 and x2 of another
// replica X (x1 answered before y was sent, x2 sent after y was answered),
// while fewer than two move windows touch [x1.sent, x2.answered]. X led
// before and after Y did, which takes two moves; with fewer, Y led while X
// still did. An answer that reaches its prober late (a descheduled thread)
// cannot produce one, unlike a plain overlap of the two requests' spans; an
// old leader that still accepts after the new one began does, as soon as
// either has answered two probes around one of the other's.
int CountInterleavedAccepts(const std::vector<ProbedAccept>& accepts,
                            const std::vector<MoveWindow>& moves);

}  // namespace metasrv::testing

#endif  // METASRV_TESTS_SERVER_ELECTION_ACCEPT_HISTORY_H_
