#include "core/flow_state_value.h"

#include <algorithm>

namespace metasrv::core {

bool FlowStat::operator==(const FlowStat& o) const {
  return flow_id == o.flow_id && fields == o.fields &&
         state_size == o.state_size && last_exec_time == o.last_exec_time &&
         start_time == o.start_time;
}

const FlowStat* FlowStateValue::Find(uint32_t flow_id) const {
  auto it = std::lower_bound(
      flows_.begin(), flows_.end(), flow_id,
      [](const FlowStat& s, uint32_t id) { return s.flow_id < id; });
  return (it != flows_.end() && it->flow_id == flow_id) ? &*it : nullptr;
}

FlowStateValue::Builder& FlowStateValue::Builder::SetStateSize(uint32_t flow_id,
                                                               uint64_t size) {
  items_.push_back({flow_id, kStateSize, size});
  return *this;
}

FlowStateValue::Builder& FlowStateValue::Builder::SetLastExecTime(
    uint32_t flow_id, int64_t unix_ms) {
  items_.push_back({flow_id, kLastExecTime, static_cast<uint64_t>(unix_ms)});
  return *this;
}

FlowStateValue::Builder& FlowStateValue::Builder::SetStartTime(
    uint32_t flow_id, int64_t unix_ms) {
  items_.push_back({flow_id, kStartTime, static_cast<uint64_t>(unix_ms)});
  return *this;
}

FlowStateValue::Builder& FlowStateValue::Builder::Set(const FlowStat& stat) {
  if (stat.has(kStateSize)) SetStateSize(stat.flow_id, stat.state_size);
  if (stat.has(kLastExecTime))
    SetLastExecTime(stat.flow_id, stat.last_exec_time);
  if (stat.has(kStartTime)) SetStartTime(stat.flow_id, stat.start_time);
  return *this;
}

FlowStateValue FlowStateValue::Builder::Build(bool* had_duplicate) {
  // Stable, so that for a repeated (flow, field) the last one set comes last.
  auto by_flow = [](const Item& a, const Item& b) {
    return a.flow_id < b.flow_id;
  };
  if (items_.size() <= kInsertionSortMax) {
    // A heartbeat's report: std::stable_sort would allocate a buffer.
    for (size_t i = 1; i < items_.size(); ++i) {
      const Item item = items_[i];
      size_t j = i;
      for (; j > 0 && by_flow(item, items_[j - 1]); --j) {
        items_[j] = items_[j - 1];
      }
      items_[j] = item;
    }
  } else {
    std::stable_sort(items_.begin(), items_.end(), by_flow);
  }
  size_t flows = 0;
  for (size_t i = 0; i < items_.size(); ++i) {
    flows += i == 0 || items_[i].flow_id != items_[i - 1].flow_id;
  }
  bool dup = false;
  FlowStateValue out;
  out.flows_.reserve(flows);
  for (const Item& item : items_) {
    if (out.flows_.empty() || out.flows_.back().flow_id != item.flow_id) {
      out.flows_.push_back(FlowStat{item.flow_id});
    }
    FlowStat& stat = out.flows_.back();
    dup |= stat.has(item.field);
    stat.fields |= item.field;
    switch (item.field) {
      case kStateSize:
        stat.state_size = item.bits;
        break;
      case kLastExecTime:
        stat.last_exec_time = static_cast<int64_t>(item.bits);
        break;
      case kStartTime:
        stat.start_time = static_cast<int64_t>(item.bits);
        break;
    }
  }
  items_.clear();
  if (had_duplicate != nullptr) *had_duplicate = dup;
  return out;
}

}  // namespace metasrv::core
