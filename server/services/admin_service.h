// The metasrv.v1.Admin service.
#ifndef METASRV_SERVER_SERVICES_ADMIN_SERVICE_H_
#define METASRV_SERVER_SERVICES_ADMIN_SERVICE_H_

#include <cstddef>
#include <cstdint>
#include <functional>

#include "absl/status/statusor.h"
#include "core/flow_state_manager.h"
#include "core/leadership.h"
#include "metasrv/v1/metasrv.pb.h"
#include "server/rpc/call_dispatcher.h"
#include "server/rpc/call_gate.h"
#include "server/rpc/unary_call.h"

namespace metasrv::server {

// Methods take raw bytes, so that zstd-compressed requests decode
// (request_decoder.h).
class AdminService final {
 public:
  // Performs a leader change and returns how many KV keys it dropped:
  // standalone, a reset; with etcd, a resignation.
  using LeaderChangeFn = std::function<absl::StatusOr<uint64_t>()>;

  // Borrows `flow_state` and `gate`; they must outlive the service. Every
  // call must pass the gate first (admin rights, then leadership). Requests
  // inflate to at most `limits`.
  AdminService(LeaderChangeFn leader_change, core::FlowStateManager* flow_state,
               const CallGate* gate, CallLimits limits);

  // Serves the service's methods through `dispatcher`.
  void Register(CallDispatcher* dispatcher);

 private:
  // Adds `method` (`name` in the service), served by admitting the call
  // through the gate, running `handle(request, response*, peer)` (returning
  // an absl::Status) and finishing.
  template <typename Request, typename Response, typename Handle>
  void Add(CallDispatcher* dispatcher, const char* name, Method method,
           Handle handle);

  const LeaderChangeFn leader_change_;        // Does LeaderChange.
  core::FlowStateManager* const flow_state_;  // The state; borrowed.
  const CallGate* const gate_;                // Who may call; borrowed.
  const CallLimits limits_;                   // Request size, reply budget.
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_SERVICES_ADMIN_SERVICE_H_
