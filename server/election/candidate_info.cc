#include "server/election/candidate_info.h"

#include <algorithm>

namespace metasrv::server {

std::string CandidateValue(
    const std::function<core::MetasrvNodeInfo()>& describe,
    const std::string& self_addr) {
  core::MetasrvNodeInfo node;
  if (describe) node = describe();
  node.addr = self_addr;
  std::string value = core::EncodeMetasrvNodeInfo(node);
  if (value.size() > kMaxCandidateValue) {
    node.info.version.clear();
    node.info.git_commit.clear();
    node.info.hostname.clear();
    value = core::EncodeMetasrvNodeInfo(node);
  }
  return value;
}

void SortByAddress(std::vector<core::MetasrvNodeInfo>* nodes) {
  std::sort(nodes->begin(), nodes->end(),
            [](const auto& a, const auto& b) { return a.addr < b.addr; });
  nodes->erase(std::unique(nodes->begin(), nodes->end(),
                           [](const auto& a, const auto& b) {
                             return a.addr == b.addr;
                           }),
               nodes->end());
}

std::vector<std::string> FollowersOf(
    const std::vector<core::MetasrvNodeInfo>& nodes,
    const std::string& leader) {
  std::vector<std::string> out;
  for (const core::MetasrvNodeInfo& node : nodes) {
    if (node.addr != leader) out.push_back(node.addr);
  }
  return out;
}

}  // namespace metasrv::server
