// The greptime.v1.meta.Cluster service: reads of the in-memory KV.
#ifndef METASRV_SERVER_SERVICES_CLUSTER_SERVICE_H_
#define METASRV_SERVER_SERVICES_CLUSTER_SERVICE_H_

#include <cstddef>
#include <string>

#include "core/leadership.h"
#include "greptime/v1/meta/cluster.pb.h"
#include "core/flow_state_manager.h"
#include "server/codec/full_state_reply.h"
#include "server/ops/metrics.h"
#include "server/ops/self_description.h"
#include "server/rpc/call_dispatcher.h"
#include "server/rpc/method_table.h"
#include "server/rpc/read_executor.h"
#include "server/rpc/unary_call.h"

namespace metasrv::server {

// As GreptimeDB's metasrv (src/meta-srv/src/service/cluster.rs), the request
// header is not looked at (GreptimeDB's clients send none), and a follower
// answers every method OK with the not-leader error in the response header
// and no data. Methods take raw bytes (see request_decoding.h).
class ClusterService final {
 public:
  // `kv` is the in-memory KV (the flow state it shows).
  ClusterService(const core::FlowStateManager* kv,
                 const core::Leadership* leadership,
                 ReadExecutor* reads, SelfDescription* self, Metrics* metrics);

  // Serves the service's methods through `dispatcher`.
  void Register(CallDispatcher* dispatcher);

 private:
  using BatchGetCall = UnaryCall<greptime::v1::meta::BatchGetRequest,
                                 greptime::v1::meta::BatchGetResponse>;
  using RangeCall = UnaryCall<greptime::v1::meta::RangeRequest,
                              greptime::v1::meta::RangeResponse>;
  using PeersCall = UnaryCall<greptime::v1::meta::MetasrvPeersRequest,
                              greptime::v1::meta::MetasrvPeersResponse>;
  void BatchGet(BatchGetCall* call);
  void Range(RangeCall* call);
  void MetasrvPeers(PeersCall* call);

  // Answers a call the door admitted as kAnswerNotLeader with the
  // not-leader header, or runs `fill(request, response)` on the read executor
  // as a read of `cost`, and finishes with its status.
  template <typename Request, typename Response, typename Fill>
  void Serve(UnaryCall<Request, Response>* call, ReadCost cost, Fill fill);

  const core::FlowStateManager* const kv_;  // The in-memory KV; borrowed.
  const core::Leadership* const leadership_;  // Who leads; borrowed.
  ReadExecutor* const reads_;                 // Runs KV reads; borrowed.
  SelfDescription* const self_;  // This replica, for peers; borrowed.
  Metrics* const metrics_;       // KV read times; borrowed.
  FullStateReply flow_state_range_;  // Range's compressed `__flow/state`.
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_SERVICES_CLUSTER_SERVICE_H_
