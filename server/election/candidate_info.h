// What each candidate of an election registers about itself (GreptimeDB's
// MetasrvNodeInfo, as upstream's candidates register it), shared by the etcd
// and SQL elections.
#ifndef METASRV_SERVER_ELECTION_CANDIDATE_INFO_H_
#define METASRV_SERVER_ELECTION_CANDIDATE_INFO_H_

#include <functional>
#include <string>
#include <vector>

#include "core/metasrv_node_info.h"

namespace metasrv::server {

// The largest value registered: the SQL stores' value column holds 1 KiB.
inline constexpr size_t kMaxCandidateValue = 1024;

// The JSON of `describe()` (or of `self_addr` alone when `describe` is
// null); past kMaxCandidateValue, without its text fields but the address.
std::string CandidateValue(
    const std::function<core::MetasrvNodeInfo()>& describe,
    const std::string& self_addr);

// Sorts `nodes` by address and keeps one per address.
void SortByAddress(std::vector<core::MetasrvNodeInfo>* nodes);

// The addresses of `nodes` but `leader`'s: the followers.
std::vector<std::string> FollowersOf(
    const std::vector<core::MetasrvNodeInfo>& nodes, const std::string& leader);

}  // namespace metasrv::server

#endif  // METASRV_SERVER_ELECTION_CANDIDATE_INFO_H_
