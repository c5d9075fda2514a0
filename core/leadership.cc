#include "core/leadership.h"

#include "absl/strings/str_cat.h"

namespace metasrv::core {

absl::Status CheckLeader(const Leadership& leadership) {
  if (leadership.IsLeader()) return absl::OkStatus();
  const std::string leader = leadership.LeaderAddr();
  return absl::FailedPreconditionError(
      leader.empty() ? std::string("not leader; no leader is elected now")
                     : absl::StrCat("not leader; the leader is ", leader));
}

}  // namespace metasrv::core
