// The metasrv.v1.FlowState service.
#ifndef METASRV_SERVER_FLOW_STATE_SERVICE_H_
#define METASRV_SERVER_FLOW_STATE_SERVICE_H_

#include <functional>

#include "core/flow_state_manager.h"
#include "core/leadership.h"
#include "metasrv/v1/metasrv.grpc.pb.h"
#include "server/arena_allocator.h"
#include "server/flow_state_watch.h"
#include "server/metrics.h"
#include "server/read_executor.h"

namespace metasrv::server {

// GetFlowState and ListFlownodes are ordinary callback methods;
// WatchFlowState writes pre-serialized bytes (one serialization per state,
// whatever the number of watchers), so it is a raw method.
class FlowStateService final
    : public metasrv::v1::FlowState::WithCallbackMethod_GetFlowState<
          metasrv::v1::FlowState::WithCallbackMethod_ListFlownodes<
              metasrv::v1::FlowState::WithRawCallbackMethod_WatchFlowState<
                  metasrv::v1::FlowState::Service>>> {
 public:
  // Borrows all; they must outlive the service. Reads run on `reads`.
  // `metrics` may be null.
  FlowStateService(const core::FlowStateManager* flow_state,
                   const core::Leadership* leadership, ReadExecutor* reads,
                   WatchHub* watch, Metrics* metrics);

  grpc::ServerUnaryReactor* GetFlowState(
      grpc::CallbackServerContext* context,
      const metasrv::v1::GetFlowStateRequest* request,
      metasrv::v1::GetFlowStateResponse* response) override;

  grpc::ServerUnaryReactor* ListFlownodes(
      grpc::CallbackServerContext* context,
      const metasrv::v1::ListFlownodesRequest* request,
      metasrv::v1::ListFlownodesResponse* response) override;

  grpc::ServerWriteReactor<grpc::ByteBuffer>* WatchFlowState(
      grpc::CallbackServerContext* context,
      const grpc::ByteBuffer* request) override;

 private:
  // If this replica leads, runs `read` on the read executor and finishes
  // with its status; else finishes with FAILED_PRECONDITION naming the leader.
  grpc::ServerUnaryReactor* LeaderRead(grpc::CallbackServerContext* context,
                                       std::function<absl::Status()> read);
  // Fills a ListFlownodes answer.
  absl::Status ListNodes(const metasrv::v1::ListFlownodesRequest& request,
                         metasrv::v1::ListFlownodesResponse* response) const;

  const core::FlowStateManager* const flow_state_;  // The state; borrowed.
  const core::Leadership* const leadership_;        // Who leads; borrowed.
  ReadExecutor* const reads_;                       // Runs reads; borrowed.
  WatchHub* const watch_;                           // Watchers; borrowed.
  Metrics* const metrics_;                          // May be null; borrowed.
  ArenaMessageAllocator<metasrv::v1::GetFlowStateRequest,
                        metasrv::v1::GetFlowStateResponse>
      allocator_;  // Responses of many flows live on an arena.
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_FLOW_STATE_SERVICE_H_
