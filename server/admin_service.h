// The metasrv.v1.Admin service.
#ifndef METASRV_SERVER_ADMIN_SERVICE_H_
#define METASRV_SERVER_ADMIN_SERVICE_H_

#include "core/flow_state_manager.h"
#include "core/leadership.h"
#include "kv/kv_backend.h"
#include "metasrv/v1/metasrv.grpc.pb.h"

namespace metasrv::server {

class AdminService final : public metasrv::v1::Admin::CallbackService {
 public:
  // Borrows all three; they must outlive the service.
  AdminService(kv::KvBackend* kv, core::FlowStateManager* flow_state,
               const core::Leadership* leadership);

  grpc::ServerUnaryReactor* LeaderChange(
      grpc::CallbackServerContext* context,
      const metasrv::v1::LeaderChangeRequest* request,
      metasrv::v1::LeaderChangeResponse* response) override;

 private:
  kv::KvBackend* const kv_;                   // The in-memory KV; borrowed.
  core::FlowStateManager* const flow_state_;  // The state; borrowed.
  const core::Leadership* const leadership_;  // Who leads; borrowed.
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_ADMIN_SERVICE_H_
