#include "core/leadership.h"

#include "absl/strings/str_cat.h"

namespace metasrv::core {

std::vector<MetasrvNodeInfo> Leadership::Peers() const {
  std::vector<MetasrvNodeInfo> out;
  for (std::string& addr : FollowerAddrs()) {
    out.push_back({std::move(addr), {}});
  }
  return out;
}

std::string NotLeaderMessage(const Leadership& leadership) {
  const std::string leader = leadership.LeaderAddr();
  return leader.empty() ? std::string("not leader; no leader is elected now")
                        : absl::StrCat("not leader; the leader is ", leader);
}

}  // namespace metasrv::core
