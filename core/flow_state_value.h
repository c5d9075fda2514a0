// The flow-state value: per flow id, the fields of core/flow_fields.h. One
// node's report and the cluster-wide aggregate have this shape.
#ifndef METASRV_CORE_FLOW_STATE_VALUE_H_
#define METASRV_CORE_FLOW_STATE_VALUE_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/flow_fields.h"

namespace metasrv::core {

// Bits of FlowStat::fields: which of the maps hold the flow (k<Name> of each
// row of flow_fields.h). The JSON format has independent maps, so a flow may
// be in some and not others.
enum FlowField : uint8_t {
#define METASRV_FIELD_BIT(Name, member, type, bit, ...) k##Name = bit,
  METASRV_FLOW_FIELDS(METASRV_FIELD_BIT)
#undef METASRV_FIELD_BIT
};

// One flow's entry. Fields whose bit is not set in `fields` are 0 and absent.
struct FlowStat {
  uint32_t flow_id = 0;  // The flow id.
  uint8_t fields = 0;    // FlowField bits present.
  // One member per row of flow_fields.h, valid when its bit is set.
#define METASRV_FIELD_MEMBER(Name, member, type, ...) type member = 0;
  METASRV_FLOW_FIELDS(METASRV_FIELD_MEMBER)
#undef METASRV_FIELD_MEMBER

  bool has(FlowField f) const { return (fields & f) != 0; }
  bool operator==(const FlowStat& o) const;
  bool operator!=(const FlowStat& o) const { return !(*this == o); }
};

// An immutable flow-state value: flows sorted by id, each id once, each with at
// least one field. Cheap to move; copying copies the flows.
class FlowStateValue {
 public:
  class Builder;

  FlowStateValue() = default;

  const std::vector<FlowStat>& flows() const { return flows_; }
  bool empty() const { return flows_.empty(); }
  // Returns the flow's entry, or null. O(log n).
  const FlowStat* Find(uint32_t flow_id) const;

  bool operator==(const FlowStateValue& o) const { return flows_ == o.flows_; }
  bool operator!=(const FlowStateValue& o) const { return !(*this == o); }

 private:
  std::vector<FlowStat> flows_;  // Sorted by flow_id, unique, fields != 0.
};

// Collects fields in any order and builds a FlowStateValue.
// When one flow's field is set twice, the last value wins (as for protobuf
// maps); Build() can report that it happened.
class FlowStateValue::Builder {
 public:
  // Set<Name>(flow_id, value) for each row of flow_fields.h.
#define METASRV_FIELD_SETTER(Name, member, type, ...)   \
  Builder& Set##Name(uint32_t flow_id, type value) {    \
    items_.push_back({flow_id, k##Name, static_cast<uint64_t>(value)}); \
    return *this;                                       \
  }
  METASRV_FLOW_FIELDS(METASRV_FIELD_SETTER)
#undef METASRV_FIELD_SETTER
  // Sets every field `stat` has.
  Builder& Set(const FlowStat& stat);
  void Reserve(size_t n) { items_.reserve(n); }
  // Fields set since the builder was made or last built.
  size_t size() const { return items_.size(); }
  // Fields it has room for without allocating.
  size_t capacity() const { return items_.capacity(); }
  // Forgets every field set after the first `n` (n <= size()).
  void Truncate(size_t n) { items_.erase(items_.begin() + n, items_.end()); }

  // Sorts and combines what was set, and empties the builder (keeping its
  // room). Sets *had_duplicate (if given) to whether any flow's field was
  // set more than once. O(n log n); no allocation but the value's for up to
  // kInsertionSortMax fields.
  FlowStateValue Build(bool* had_duplicate = nullptr);

 private:
  struct Item {
    uint32_t flow_id;  // The flow.
    FlowField field;   // Which field.
    uint64_t bits;  // The value's bits (int64 stored as its two's complement).
  };
  // Up to this many fields are sorted in place (a report of tens of flows).
  static constexpr size_t kInsertionSortMax = 64;
  std::vector<Item> items_;  // In the order they were set.
};

}  // namespace metasrv::core

#endif  // METASRV_CORE_FLOW_STATE_VALUE_H_
