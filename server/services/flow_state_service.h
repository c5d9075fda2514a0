// The metasrv.v1.FlowState service.
#ifndef METASRV_SERVER_SERVICES_FLOW_STATE_SERVICE_H_
#define METASRV_SERVER_SERVICES_FLOW_STATE_SERVICE_H_

#include <cstddef>

#include "core/flow_state_manager.h"
#include "core/leadership.h"
#include "metasrv/v1/metasrv.pb.h"
#include "server/codec/full_state_reply.h"
#include "server/ops/metrics.h"
#include "server/ops/refused_reports.h"
#include "server/rpc/call_dispatcher.h"
#include "server/rpc/method_table.h"
#include "server/rpc/read_executor.h"
#include "server/rpc/unary_call.h"
#include "server/watch/flow_state_watch.h"

namespace metasrv::server {

// Every method takes raw bytes, so that zstd-compressed requests decode
// (request_decoding.h); WatchFlowState also writes pre-serialized bytes
// (one serialization per state, whatever the number of watchers).
class FlowStateService final {
 public:
  // Borrows all; they must outlive the service. Reads run on `reads`.
  // Null `metrics`: none kept. ListFlownodes lists the nodes `refused`
  // names too (null: none).
  FlowStateService(const core::FlowStateManager* flow_state,
                   ReadExecutor* reads, WatchHub* watch, Metrics* metrics,
                   const RefusedReports* refused = nullptr);

  // Serves the service's methods through `dispatcher`.
  void Register(CallDispatcher* dispatcher);

 private:
  using GetCall = UnaryCall<metasrv::v1::GetFlowStateRequest,
                            metasrv::v1::GetFlowStateResponse>;
  using ListCall = UnaryCall<metasrv::v1::ListFlownodesRequest,
                             metasrv::v1::ListFlownodesResponse>;
  void GetFlowState(GetCall* call);
  void ListFlownodes(ListCall* call);
  // Fills a ListFlownodes answer.
  absl::Status ListNodes(const metasrv::v1::ListFlownodesRequest& request,
                         metasrv::v1::ListFlownodesResponse* response) const;

  const core::FlowStateManager* const flow_state_;  // The state; borrowed.
  ReadExecutor* const reads_;                       // Runs reads; borrowed.
  WatchHub* const watch_;                           // Watchers; borrowed.
  Metrics* const metrics_;     // Borrowed; never null (Metrics::OrDiscard).
  const RefusedReports* const refused_;  // Refused nodes; borrowed, or null.
  FullStateReply full_state_;  // The last all-flows answers, shared.
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_SERVICES_FLOW_STATE_SERVICE_H_
