// Exponential backoff between retries of a store that failed.
#ifndef METASRV_SERVER_ELECTION_BACKOFF_H_
#define METASRV_SERVER_ELECTION_BACKOFF_H_

#include <algorithm>

#include "absl/time/time.h"

namespace metasrv::server {

// 100 ms, doubling up to 2 s. Not thread-safe; one per retry loop.
class Backoff {
 public:
  // The wait before the next retry.
  absl::Duration Next() {
    const absl::Duration d = next_;
    next_ = std::min(next_ * 2, kMax);
    return d;
  }
  // After a success: start over from the shortest wait.
  void Reset() { next_ = kMin; }

 private:
  static constexpr absl::Duration kMin = absl::Milliseconds(100);
  static constexpr absl::Duration kMax = absl::Seconds(2);
  absl::Duration next_ = kMin;  // The next wait.
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_ELECTION_BACKOFF_H_
