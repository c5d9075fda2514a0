// The running maximum of one field of one flow across the nodes that report it.
#ifndef METASRV_CORE_FIELD_MAX_H_
#define METASRV_CORE_FIELD_MAX_H_

#include <cstdint>
#include <memory>
#include <utility>

#include "absl/container/btree_set.h"

namespace metasrv::core {

// Tracks max(value) over a set of (node, value) contributions, with the node
// that holds it (ties go to the larger node id).
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
  // The max value and the node holding it. Meaningful only when !empty().
  T value() const { return max_; }
  uint64_t holder() const { return holder_; }

  // Adds `node`'s contribution. The node must not contribute already.
  void Add(uint64_t node, T v) {
    if (count_ == 0) {
      max_ = v;
      holder_ = node;
    } else {
      if (count_ == 1) {
        ranked_ = std::make_unique<Ranked>();
        ranked_->insert({max_, holder_});
      }
      ranked_->insert({v, node});
      TakeTop();
    }
    ++count_;
  }

  // Removes `node`'s contribution, whose current value is `v`.
  void Remove(uint64_t node, T v) {
    --count_;
    if (count_ == 0) return;
    ranked_->erase({v, node});
    TakeTop();
    if (count_ == 1) ranked_.reset();
  }

  // Changes `node`'s contribution from `old_v` to `new_v`.
  void Update(uint64_t node, T old_v, T new_v) {
    if (count_ == 1) {
      max_ = new_v;
      return;
    }
    if (old_v == new_v) return;
    ranked_->erase({old_v, node});
    ranked_->insert({new_v, node});
    TakeTop();
  }

 private:
  using Ranked = absl::btree_set<std::pair<T, uint64_t>>;

  void TakeTop() {
    const auto& top = *ranked_->rbegin();
    max_ = top.first;
    holder_ = top.second;
  }

  uint32_t count_ = 0;              // Nodes contributing.
  T max_{};                         // The max over them.
  uint64_t holder_ = 0;             // A node holding max_.
  std::unique_ptr<Ranked> ranked_;  // All contributions; set iff count_ >= 2.
};

}  // namespace metasrv::core

#endif  // METASRV_CORE_FIELD_MAX_H_
