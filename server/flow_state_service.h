// The metasrv.v1.FlowState and metasrv.v1.Admin services.
#ifndef METASRV_SERVER_FLOW_STATE_SERVICE_H_
#define METASRV_SERVER_FLOW_STATE_SERVICE_H_

#include "core/flow_state_manager.h"
#include "core/leadership.h"
#include "metasrv/v1/metasrv.grpc.pb.h"

namespace metasrv::server {

class FlowStateService final : public metasrv::v1::FlowState::CallbackService {
 public:
  // Borrows both; they must outlive the service.
  FlowStateService(const core::FlowStateManager* flow_state,
                   const core::Leadership* leadership);

  grpc::ServerUnaryReactor* GetFlowState(
      grpc::CallbackServerContext* context,
      const metasrv::v1::GetFlowStateRequest* request,
      metasrv::v1::GetFlowStateResponse* response) override;

 private:
  const core::FlowStateManager* const flow_state_;  // The state; borrowed.
  const core::Leadership* const leadership_;        // Who leads; borrowed.
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_FLOW_STATE_SERVICE_H_
