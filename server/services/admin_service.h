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
#include "server/rpc/method_table.h"
#include "server/rpc/unary_call.h"

namespace metasrv::server {

// Methods take raw bytes, so that zstd-compressed requests decode
// (request_decoding.h).
class AdminService final {
 public:
  // Performs a leader change and returns how many KV keys it dropped:
  // standalone, a reset; with etcd, a resignation.
  using LeaderChangeFn = std::function<absl::StatusOr<uint64_t>()>;

  // Borrows `flow_state`; it must outlive the service. The door admits
  // every call first (admin rights when accepted, then leadership).
  AdminService(LeaderChangeFn leader_change,
               core::FlowStateManager* flow_state);

  // Serves the service's methods through `dispatcher`.
  void Register(CallDispatcher* dispatcher);

 private:
  // Adds `method`, served by running `handle(request, response*, peer)`
  // (returning an absl::Status) and finishing.
  template <typename Request, typename Response, typename Handle>
  void Add(CallDispatcher* dispatcher, Method method, Handle handle);

  const LeaderChangeFn leader_change_;        // Does LeaderChange.
  core::FlowStateManager* const flow_state_;  // The state; borrowed.
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_SERVICES_ADMIN_SERVICE_H_
