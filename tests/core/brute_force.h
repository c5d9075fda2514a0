// Test support of the core: the flow-state aggregate recomputed from scratch,
// the way the reference metasrv does it (read every per-node key, take the max
// of each field), which tests and fuzzers compare the incremental aggregate
// against; and a report builder.
#ifndef METASRV_TESTS_CORE_BRUTE_FORCE_H_
#define METASRV_TESTS_CORE_BRUTE_FORCE_H_

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <tuple>
#include <string>

#include "absl/status/statusor.h"
#include "core/flow_state_manager.h"
#include "kv/kv_backend.h"

namespace metasrv::testing {

// A report of flows {id: (state size, last execution time)}.
core::FlowStateValue Report(
    std::initializer_list<std::tuple<uint32_t, uint64_t, int64_t>> flows);

// The max over every `__flow/state/node/*` value in `kv`. An error if one
// does not decode.
absl::StatusOr<core::FlowStateValue> BruteForceAggregate(const kv::KvBackend& kv);

// Empty when the aggregate `manager` serves, as its typed Get() and as the
// JSON of its KV's `__flow/state`, agrees with BruteForceAggregate() of its
// KV (and is absent only when no node key exists); otherwise what differs.
std::string CheckAggregate(const core::FlowStateManager& manager);

}  // namespace metasrv::testing

#endif  // METASRV_TESTS_CORE_BRUTE_FORCE_H_
