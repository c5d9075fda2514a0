// Failed admin attempts, slowed per peer. A peer's first few failures cost
// it nothing; after them each failure makes it wait twice as long as the
// last before its next attempt counts, up to a ceiling. A peer in its
// back-off is refused at once (its call is never held open, so the slowing
// costs the server nothing), and a success forgets its failures. Other
// peers are not slowed: the right token from another host still works.
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
  };

  // `clock` (its monotonic time) is borrowed and outlives this.
  AuthBackoff(Options options, const core::Clock* clock);

  // How long `host` must still wait before an attempt counts; zero when it
  // may try now.
  absl::Duration WaitOf(absl::string_view host) const ABSL_LOCKS_EXCLUDED(mu_);
  // `host` failed: its failures grow, and past the free ones so does its
  // wait. Returns the wait it now has.
  absl::Duration Failed(absl::string_view host) ABSL_LOCKS_EXCLUDED(mu_);
  // `host` succeeded: its failures are forgotten.
  void Succeeded(absl::string_view host) ABSL_LOCKS_EXCLUDED(mu_);
  // Peers remembered now.
  size_t size() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Peer {
    int failures = 0;
    absl::Time until = absl::InfinitePast();  // Its wait ends (monotonic).
  };

  const Options options_;
  const core::Clock* const clock_;  // Borrowed.
  mutable absl::Mutex mu_;          // Guards peers_.
  absl::flat_hash_map<std::string, Peer> peers_ ABSL_GUARDED_BY(mu_);
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_OPS_AUTH_BACKOFF_H_
