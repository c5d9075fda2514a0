// Failed admin attempts, answered late. Every attempt's token is checked
// at once, so the right one always works, from any host, whatever others
// guess. What a guesser waits for is the answer to a wrong one: a host's
// first few failures are answered at once, each after them waits twice as
// long as its last, up to a ceiling, one after another; and wrong answers
// in all go out at most `failed_answers_per_second` (hosts guessing
// together wait in line). A waiting call is charged at the door like any
// other, so waiting costs the guesser its own calls. A success forgets its
// host's failures.
#ifndef METASRV_SERVER_OPS_AUTH_BACKOFF_H_
#define METASRV_SERVER_OPS_AUTH_BACKOFF_H_

#include <cstddef>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/clock.h"

namespace metasrv::server {

// Thread-safe.
class AuthBackoff {
 public:
  struct Options {
    int free_failures = 3;                         // Before any wait.
    absl::Duration first_wait = absl::Seconds(1);  // After the first paid.
    absl::Duration max_wait = absl::Minutes(5);    // The ceiling.
    // Peers remembered at once; past it, the one whose wait ends first is
    // forgotten (a flood of hosts cannot grow the table).
    size_t max_peers = 4096;
    // Wrong answers sent per second, over all hosts.
    double failed_answers_per_second = 20;
  };

  // `clock` (its monotonic time) is borrowed and outlives this.
  AuthBackoff(Options options, const core::Clock* clock);

  // `host` failed now: its failures grow, and past the free ones so does
  // its wait. Returns when (monotonic) the wrong answer may be sent: now,
  // or later.
  absl::Time Failed(absl::string_view host) ABSL_LOCKS_EXCLUDED(mu_);
  // `host` succeeded: its failures are forgotten.
  void Succeeded(absl::string_view host) ABSL_LOCKS_EXCLUDED(mu_);
  // Peers remembered now.
  size_t size() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Peer {
    int failures = 0;
    // When its last wrong answer goes (monotonic); the next is later.
    absl::Time until = absl::InfinitePast();
  };

  const Options options_;
  const core::Clock* const clock_;  // Borrowed.
  mutable absl::Mutex mu_;          // Guards the fields below.
  absl::flat_hash_map<std::string, Peer> peers_ ABSL_GUARDED_BY(mu_);
  // When the last wrong answer of any host goes (monotonic).
  absl::Time any_until_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_OPS_AUTH_BACKOFF_H_
