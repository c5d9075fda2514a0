#include "tests/core/brute_force.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "core/flow_state_codec.h"
#include "core/flow_state_keys.h"

namespace metasrv::testing {

core::FlowStateValue Report(
    std::initializer_list<std::tuple<uint32_t, uint64_t, int64_t>> flows) {
  core::FlowStateValue::Builder b;
  for (const auto& [id, size, time] : flows) {
    b.SetStateSize(id, size).SetLastExecTime(id, time);
  }
  return b.Build();
}

absl::StatusOr<core::FlowStateValue> BruteForceAggregate(const kv::KvBackend& kv) {
  using core::FlowStat;
  const std::string prefix(core::kFlowStateNodePrefix);
  absl::StatusOr<kv::RangeResponse> nodes = kv.Range({prefix, kv::PrefixEnd(prefix)});
  if (!nodes.ok()) return nodes.status();
  std::map<uint32_t, FlowStat> max;
  for (const kv::KeyValue& e : nodes->kvs) {
    absl::StatusOr<core::FlowStateValue> report = core::DecodeFlowState(e.value);
    if (!report.ok()) return report.status();
    for (const FlowStat& s : report->flows()) {
      FlowStat& m = max[s.flow_id];
      m.flow_id = s.flow_id;
      if (s.has(core::kStateSize) &&
          (!m.has(core::kStateSize) || s.state_size > m.state_size)) {
        m.state_size = s.state_size;
      }
      if (s.has(core::kLastExecTime) &&
          (!m.has(core::kLastExecTime) || s.last_exec_time > m.last_exec_time)) {
        m.last_exec_time = s.last_exec_time;
      }
      if (s.has(core::kStartTime) &&
          (!m.has(core::kStartTime) || s.start_time > m.start_time)) {
        m.start_time = s.start_time;
      }
      m.fields |= s.fields;
    }
  }
  core::FlowStateValue::Builder b;
  for (const auto& [id, m] : max) b.Set(m);
  return b.Build();
}

std::string CheckAggregate(const core::FlowStateManager& manager) {
  std::optional<core::FlowStateValue> got = manager.Aggregate();
  absl::StatusOr<std::string> json =
      manager.Get(std::string(core::kFlowStateKey));
  if (got.has_value() != json.ok()) {
    return absl::StrCat("typed Get() and the KV disagree on whether ",
                        "there is an aggregate: ", json.status().ToString());
  }
  const std::string prefix(core::kFlowStateNodePrefix);
  absl::StatusOr<kv::RangeResponse> nodes =
      manager.Range({prefix, kv::PrefixEnd(prefix), 0, true});
  if (!nodes.ok()) return nodes.status().ToString();
  if (!got.has_value()) {
    return nodes->kvs.empty() ? "" : "no aggregate, but node keys exist";
  }
  absl::StatusOr<core::FlowStateValue> decoded = core::DecodeFlowState(*json);
  if (!decoded.ok()) return decoded.status().ToString();
  absl::StatusOr<core::FlowStateValue> want = BruteForceAggregate(manager);
  if (!want.ok()) return want.status().ToString();
  for (const core::FlowStateValue* seen : {&*got, &*decoded}) {
    if (*seen != *want) {
      return absl::StrCat("aggregate ", core::EncodeFlowState(*seen),
                          " != brute force ", core::EncodeFlowState(*want));
    }
  }
  return "";
}

}  // namespace metasrv::testing
