#include "core/leader_reset.h"

namespace metasrv::core {

absl::StatusOr<uint64_t> ResetForLeaderChange(kv::KvBackend* kv,
                                              FlowStateManager* flow_state) {
  absl::StatusOr<uint64_t> dropped = kv->Reset();
  if (!dropped.ok()) return dropped;
  absl::Status synced = flow_state->Sync();
  if (!synced.ok()) return synced;
  return dropped;
}

}  // namespace metasrv::core
