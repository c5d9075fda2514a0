// The metasrv.v1.FlowState and metasrv.v1.Admin services.
#ifndef METASRV_SERVER_FLOW_STATE_SERVICE_H_
#define METASRV_SERVER_FLOW_STATE_SERVICE_H_

#include "core/flow_state_manager.h"
#include "core/leadership.h"
#include "metasrv/v1/metasrv.grpc.pb.h"
#include "server/arena_allocator.h"
#include "server/read_executor.h"

namespace metasrv::server {

class FlowStateService final : public metasrv::v1::FlowState::CallbackService {
 public:
  // Borrows all three; they must outlive the service. Reads run on `reads`.
  FlowStateService(const core::FlowStateManager* flow_state,
                   const core::Leadership* leadership, ReadExecutor* reads);

  grpc::ServerUnaryReactor* GetFlowState(
      grpc::CallbackServerContext* context,
      const metasrv::v1::GetFlowStateRequest* request,
      metasrv::v1::GetFlowStateResponse* response) override;

 private:
  // Answers a request; runs on the read executor.
  grpc::Status Fill(const metasrv::v1::GetFlowStateRequest& request,
                    metasrv::v1::GetFlowStateResponse* response) const;

  const core::FlowStateManager* const flow_state_;  // The state; borrowed.
  const core::Leadership* const leadership_;        // Who leads; borrowed.
  ReadExecutor* const reads_;                       // Runs reads; borrowed.
  ArenaMessageAllocator<metasrv::v1::GetFlowStateRequest,
                        metasrv::v1::GetFlowStateResponse>
      allocator_;  // Responses of many flows live on an arena.
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_FLOW_STATE_SERVICE_H_
