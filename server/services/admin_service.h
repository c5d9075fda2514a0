// The metasrv.v1.Admin service.
#ifndef METASRV_SERVER_SERVICES_ADMIN_SERVICE_H_
#define METASRV_SERVER_SERVICES_ADMIN_SERVICE_H_

#include <cstddef>
#include <cstdint>
#include <functional>

#include "absl/status/statusor.h"
#include "core/flow_state_manager.h"
#include "core/leadership.h"
#include "metasrv/v1/metasrv.grpc.pb.h"
#include "server/ops/admin_auth.h"
#include "server/rpc/unary_call.h"

namespace metasrv::server {

// Methods take raw bytes, so that zstd-compressed requests decode
// (request_decoder.h).
class AdminService final
    : public metasrv::v1::Admin::WithRawCallbackMethod_LeaderChange<
          metasrv::v1::Admin::WithRawCallbackMethod_ForgetFlows<
              metasrv::v1::Admin::Service>> {
 public:
  // Performs a leader change and returns how many KV keys it dropped:
  // standalone, a reset; with etcd, a resignation.
  using LeaderChangeFn = std::function<absl::StatusOr<uint64_t>()>;

  // Borrows `flow_state` and `leadership`; they must outlive the service.
  // Every call must pass `auth` first. Requests inflate to at most
  // `limits`.
  AdminService(LeaderChangeFn leader_change, core::FlowStateManager* flow_state,
               const core::Leadership* leadership, AdminAuth auth,
               CallLimits limits);

  grpc::ServerUnaryReactor* LeaderChange(grpc::CallbackServerContext* context,
                                         const grpc::ByteBuffer* request,
                                         grpc::ByteBuffer* response) override;

  grpc::ServerUnaryReactor* ForgetFlows(grpc::CallbackServerContext* context,
                                        const grpc::ByteBuffer* request,
                                        grpc::ByteBuffer* response) override;

 private:
  // OK if the caller may use admin RPCs (logs refusals, never the token) and
  // this replica leads.
  absl::Status Admit(grpc::CallbackServerContext* context,
                     const char* method) const;
  // One admin call: decodes the request, admits it (see Admit), runs
  // `handle(request, response*)` (returning an absl::Status) and finishes.
  template <typename Request, typename Response, typename Handle>
  grpc::ServerUnaryReactor* Serve(grpc::CallbackServerContext* context,
                                  const grpc::ByteBuffer* request,
                                  grpc::ByteBuffer* response,
                                  const char* method, Handle handle) const;

  const AdminAuth auth_;                      // Who may call.
  const LeaderChangeFn leader_change_;        // Does LeaderChange.
  core::FlowStateManager* const flow_state_;  // The state; borrowed.
  const core::Leadership* const leadership_;  // Who leads; borrowed.
  const CallLimits limits_;                   // Request size, reply budget.
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_SERVICES_ADMIN_SERVICE_H_
