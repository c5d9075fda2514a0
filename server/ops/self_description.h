// This replica's MetasrvNodeInfo: what it registers in the election's store
// for the others and answers MetasrvPeers with, as upstream's metasrv does
// (build info, and the resources of ResourceSpec in
// src/meta-srv/src/metasrv.rs: total and used CPU and memory).
#ifndef METASRV_SERVER_OPS_SELF_DESCRIPTION_H_
#define METASRV_SERVER_OPS_SELF_DESCRIPTION_H_

#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/clock.h"
#include "core/metasrv_node_info.h"

namespace metasrv::server {

// Thread-safe.
class SelfDescription {
 public:
  // `addr` is the advertised address; the version, commit, start time and
  // host name are this process's. Borrows `clock`.
  SelfDescription(std::string addr, const core::Clock* clock);

  // Now: the totals (the cgroup's CPU and memory limits, else the
  // machine's), this process's CPU use (millicores, over the time since the
  // previous sample, at most one a second) and resident memory.
  core::MetasrvNodeInfo Now();

 private:
  const core::Clock* const clock_;  // For the CPU rate; borrowed.
  absl::Mutex mu_;                  // Guards the fields below.
  core::MetasrvNodeInfo last_ ABSL_GUARDED_BY(mu_);  // The latest sample.
  absl::Time sampled_at_ ABSL_GUARDED_BY(mu_) =
      absl::InfinitePast();                      // When (monotonic).
  double cpu_seconds_ ABSL_GUARDED_BY(mu_) = 0;  // CPU time then.
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_OPS_SELF_DESCRIPTION_H_
