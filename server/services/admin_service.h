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
#include "server/rpc/call_gate.h"
#include "server/rpc/unary_call.h"

namespace metasrv::server {

// Methods take raw bytes, so that zstd-compressed requests decode
// (request_decoder.h).
class AdminService final
    : public metasrv::v1::Admin::WithRawCallbackMethod_LeaderChange<
          metasrv::v1::Admin::WithRawCallbackMethod_ForgetFlows<
              metasrv::v1::Admin::WithRawCallbackMethod_ForgetNodes<
                  metasrv::v1::Admin::Service>>> {
 public:
  // Performs a leader change and returns how many KV keys it dropped:
  // standalone, a reset; with etcd, a resignation.
  using LeaderChangeFn = std::function<absl::StatusOr<uint64_t>()>;

  // Borrows `flow_state` and `gate`; they must outlive the service. Every
  // call must pass the gate first (admin rights, then leadership). Requests
  // inflate to at most `limits`.
  AdminService(LeaderChangeFn leader_change, core::FlowStateManager* flow_state,
               const CallGate* gate, CallLimits limits);

  grpc::ServerUnaryReactor* LeaderChange(grpc::CallbackServerContext* context,
                                         const grpc::ByteBuffer* request,
                                         grpc::ByteBuffer* response) override;

  grpc::ServerUnaryReactor* ForgetFlows(grpc::CallbackServerContext* context,
                                        const grpc::ByteBuffer* request,
                                        grpc::ByteBuffer* response) override;

  grpc::ServerUnaryReactor* ForgetNodes(grpc::CallbackServerContext* context,
                                        const grpc::ByteBuffer* request,
                                        grpc::ByteBuffer* response) override;

 private:
  // One admin call: decodes the request, admits it through the gate, runs
  // `handle(request, response*)` (returning an absl::Status) and finishes.
  template <typename Request, typename Response, typename Handle>
  grpc::ServerUnaryReactor* Serve(Method method,
                                  grpc::CallbackServerContext* context,
                                  const grpc::ByteBuffer* request,
                                  grpc::ByteBuffer* response,
                                  Handle handle) const;

  const LeaderChangeFn leader_change_;        // Does LeaderChange.
  core::FlowStateManager* const flow_state_;  // The state; borrowed.
  const CallGate* const gate_;                // Who may call; borrowed.
  const CallLimits limits_;                   // Request size, reply budget.
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_SERVICES_ADMIN_SERVICE_H_
