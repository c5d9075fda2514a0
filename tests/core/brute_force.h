// The flow-state aggregate recomputed from scratch, the way the reference
// metasrv does it: read every per-node key, take the max of each field. Tests
// and fuzzers compare the incremental aggregate against it.
#ifndef METASRV_TESTS_CORE_BRUTE_FORCE_H_
#define METASRV_TESTS_CORE_BRUTE_FORCE_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "core/flow_state_manager.h"
#include "kv/kv_backend.h"

namespace metasrv::testing {

// The max over every `__flow/state/node/*` value in `kv`. An error if one
// does not decode.
absl::StatusOr<core::FlowStateValue> BruteForceAggregate(const kv::KvBackend& kv);

// Empty when `manager.Get()` agrees with BruteForceAggregate(kv) (and says
// "none" exactly when no node key exists); otherwise what differs.
std::string CheckAggregate(const core::FlowStateManager& manager,
                           const kv::KvBackend& kv);

}  // namespace metasrv::testing

#endif  // METASRV_TESTS_CORE_BRUTE_FORCE_H_
