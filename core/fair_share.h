// The max-min rule every pool shared by client host applies at its bound
// (the gRPC port's connections, calls, reply bytes, request bytes and read
// queue; the flow state's node slots): a host's fair share is the bound
// over the hosts holding some, the one asking counted; a host under its
// share may take, and the hosts over theirs give back, the one holding the
// most first. A pool keeps its own holdings and chooses what a host gives
// back (its oldest connection, its idlest call, ...); this says who.
//
// A value: fill it with Count(), then ask. Not thread-safe (built under the
// pool's own lock).
#ifndef METASRV_CORE_FAIR_SHARE_H_
#define METASRV_CORE_FAIR_SHARE_H_

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"

namespace metasrv::core {

template <typename Host>
class FairShare {
 public:
  // At `bound`, for `asker` (the host that wants room).
  FairShare(int64_t bound, Host asker) : bound_(bound), asker_(asker) {}

  // `host` holds `n` more.
  void Count(const Host& host, int64_t n = 1) { held_[host] += n; }
  // What `host` holds.
  int64_t held(const Host& host) const {
    auto it = held_.find(host);
    return it == held_.end() ? 0 : it->second;
  }
  // The bound over the hosts holding, the asker counted; at least 1.
  int64_t share() const {
    const int64_t hosts = static_cast<int64_t>(held_.size()) +
                          (held_.contains(asker_) ? 0 : 1);
    return std::max<int64_t>(1, bound_ / hosts);
  }
  // Whether the asker may take `more` at the bound: its holding then stays
  // within its share.
  bool AskerMayTake(int64_t more = 1) const {
    return held(asker_) + more <= share();
  }
  // The hosts other than the asker holding more than their share, with
  // what each holds, the one holding the most first: those that give back.
  std::vector<std::pair<int64_t, Host>> Over() const {
    const int64_t fair = share();
    std::vector<std::pair<int64_t, Host>> over;
    for (const auto& [host, n] : held_) {
      if (n > fair && !(host == asker_)) over.emplace_back(n, host);
    }
    std::sort(over.begin(), over.end(), [](const auto& a, const auto& b) {
      return a.first > b.first;
    });
    return over;
  }

 private:
  const int64_t bound_;
  const Host asker_;
  absl::flat_hash_map<Host, int64_t> held_;
};

}  // namespace metasrv::core

#endif  // METASRV_CORE_FAIR_SHARE_H_
