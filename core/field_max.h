// The running maximum of one field of one flow across the nodes that report it.
#ifndef METASRV_CORE_FIELD_MAX_H_
#define METASRV_CORE_FIELD_MAX_H_

#include <cstdint>
#include <memory>
#include <utility>

#include "absl/container/btree_set.h"

namespace metasrv::core {

// Tracks max(value) over a set of (node, value) contributions, with the node
// that holds it (ties go to the larger node id). The max and its holder are
// kept by the caller, in the two variables every call is given (so a flow's
// maxima exist once, where readers see them; see FlowAggregate): they are
// meaningful only while !empty().
//
// A flow normally runs on one flownode, so the common case is one contributor:
// then the max is that value, with no allocation. With two or more, a btree
// ranks the contributions, so every operation is O(log contributors) and a
// lowered or removed max never needs a scan.
//
// Not thread-safe; the caller passes each node's previous value back in.
template <typename T>
class FieldMax {
 public:
  bool empty() const { return count_ == 0; }
  uint32_t count() const { return count_; }

  // Adds `node`'s contribution. The node must not contribute already.
  void Add(uint64_t node, T v, T& max, uint64_t& holder) {
    if (count_ == 0) {
      max = v;
      holder = node;
    } else {
      if (count_ == 1) {
        ranked_ = std::make_unique<Ranked>();
        ranked_->insert({max, holder});
      }
      ranked_->insert({v, node});
      TakeTop(max, holder);
    }
    ++count_;
  }

  // Removes `node`'s contribution, whose current value is `v`.
  void Remove(uint64_t node, T v, T& max, uint64_t& holder) {
    --count_;
    if (count_ == 0) return;
    ranked_->erase({v, node});
    TakeTop(max, holder);
    if (count_ == 1) ranked_.reset();
  }

  // Changes `node`'s contribution from `old_v` to `new_v`.
  void Update(uint64_t node, T old_v, T new_v, T& max, uint64_t& holder) {
    if (count_ == 1) {
      max = new_v;
      return;
    }
    if (old_v == new_v) return;
    ranked_->erase({old_v, node});
    ranked_->insert({new_v, node});
    TakeTop(max, holder);
  }

 private:
  using Ranked = absl::btree_set<std::pair<T, uint64_t>>;

  void TakeTop(T& max, uint64_t& holder) const {
    const auto& top = *ranked_->rbegin();
    max = top.first;
    holder = top.second;
  }

  uint32_t count_ = 0;              // Nodes contributing.
  std::unique_ptr<Ranked> ranked_;  // All contributions; set iff count_ >= 2.
};

}  // namespace metasrv::core

#endif  // METASRV_CORE_FIELD_MAX_H_
