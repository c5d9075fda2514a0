// The flow-state value: per flow id, its state size, last execution time and
// start time. One node's report and the cluster-wide aggregate have this shape.
#ifndef METASRV_CORE_FLOW_STATE_VALUE_H_
#define METASRV_CORE_FLOW_STATE_VALUE_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace metasrv::core {

// Bits of FlowStat::fields: which of the three maps hold the flow. The JSON
// format has three independent maps, so a flow may be in some and not others.
enum FlowField : uint8_t {
  kStateSize = 1,     // state_size: bytes of in-memory state.
  kLastExecTime = 2,  // last_exec_time_map: unix ms of the last execution.
  kStartTime = 4,     // start_time_map: unix ms the flow started.
};

// One flow's entry. Fields whose bit is not set in `fields` are 0 and absent.
struct FlowStat {
  uint32_t flow_id = 0;        // The flow id.
  uint8_t fields = 0;          // FlowField bits present.
  uint64_t state_size = 0;     // Valid when kStateSize is set.
  int64_t last_exec_time = 0;  // Valid when kLastExecTime is set.
  int64_t start_time = 0;      // Valid when kStartTime is set.

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
  Builder& SetStateSize(uint32_t flow_id, uint64_t size);
  Builder& SetLastExecTime(uint32_t flow_id, int64_t unix_ms);
  Builder& SetStartTime(uint32_t flow_id, int64_t unix_ms);
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
