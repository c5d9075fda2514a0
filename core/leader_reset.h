// What a leader change does to this replica's state.
#ifndef METASRV_CORE_LEADER_RESET_H_
#define METASRV_CORE_LEADER_RESET_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "core/flow_state_manager.h"
#include "kv/kv_backend.h"

namespace metasrv::core {

// Resets the in-memory KV, as every leadership change does, and drops what
// `flow_state` derived from it. Returns the number of keys dropped.
absl::StatusOr<uint64_t> ResetForLeaderChange(kv::KvBackend* kv,
                                              FlowStateManager* flow_state);

}  // namespace metasrv::core

#endif  // METASRV_CORE_LEADER_RESET_H_
