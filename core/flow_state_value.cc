#include "core/flow_state_value.h"

#include <algorithm>

namespace metasrv::core {

bool FlowStat::operator==(const FlowStat& o) const {
#define METASRV_FIELD_EQUAL(Name, member, ...) &&member == o.member
  return flow_id == o.flow_id &&
         fields == o.fields METASRV_FLOW_FIELDS(METASRV_FIELD_EQUAL);
#undef METASRV_FIELD_EQUAL
}

const FlowStat* FlowStateValue::Find(uint32_t flow_id) const {
  auto it = std::lower_bound(
      flows_.begin(), flows_.end(), flow_id,
      [](const FlowStat& s, uint32_t id) { return s.flow_id < id; });
  return (it != flows_.end() && it->flow_id == flow_id) ? &*it : nullptr;
}

FlowStateValue::Builder& FlowStateValue::Builder::Set(const FlowStat& stat) {
#define METASRV_FIELD_SET(Name, member, ...) \
  if (stat.has(k##Name)) Set##Name(stat.flow_id, stat.member);
  METASRV_FLOW_FIELDS(METASRV_FIELD_SET)
#undef METASRV_FIELD_SET
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
#define METASRV_FIELD_CASE(Name, member, type, ...) \
  case k##Name:                                     \
    stat.member = static_cast<type>(item.bits);     \
    break;
      METASRV_FLOW_FIELDS(METASRV_FIELD_CASE)
#undef METASRV_FIELD_CASE
    }
  }
  items_.clear();
  if (had_duplicate != nullptr) *had_duplicate = dup;
  return out;
}

}  // namespace metasrv::core
