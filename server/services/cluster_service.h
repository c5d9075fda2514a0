// The greptime.v1.meta.Cluster service: reads of the in-memory KV.
#ifndef METASRV_SERVER_SERVICES_CLUSTER_SERVICE_H_
#define METASRV_SERVER_SERVICES_CLUSTER_SERVICE_H_

#include <cstddef>
#include <string>

#include "core/leadership.h"
#include "greptime/v1/meta/cluster.grpc.pb.h"
#include "kv/kv_backend.h"
#include "server/ops/metrics.h"
#include "server/ops/self_description.h"
#include "server/rpc/call_gate.h"
#include "server/rpc/read_executor.h"
#include "server/rpc/unary_call.h"

namespace metasrv::server {

// As GreptimeDB's metasrv (src/meta-srv/src/service/cluster.rs), the request
// header is not looked at (GreptimeDB's clients send none), and a follower
// answers every method OK with the not-leader error in the response header
// and no data. Methods take raw bytes (see request_decoder.h).
class ClusterService final
    : public greptime::v1::meta::Cluster::WithRawCallbackMethod_BatchGet<
          greptime::v1::meta::Cluster::WithRawCallbackMethod_Range<
              greptime::v1::meta::Cluster::WithRawCallbackMethod_MetasrvPeers<
                  greptime::v1::meta::Cluster::Service>>> {
 public:
  // Borrows `kv`, `gate`, `reads`, `self` and `metrics` (null: none); they
  // must outlive the service. KV reads run on `reads` and are timed in
  // `metrics`. Calls are held to `limits`.
  ClusterService(const kv::KvBackend* kv, const CallGate* gate,
                 ReadExecutor* reads, SelfDescription* self, Metrics* metrics,
                 CallLimits limits);

  grpc::ServerUnaryReactor* BatchGet(grpc::CallbackServerContext* context,
                                     const grpc::ByteBuffer* request,
                                     grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* Range(grpc::CallbackServerContext* context,
                                  const grpc::ByteBuffer* request,
                                  grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* MetasrvPeers(grpc::CallbackServerContext* context,
                                         const grpc::ByteBuffer* request,
                                         grpc::ByteBuffer* response) override;

 private:
  // Decodes the request; on a follower answers "not leader"; else runs
  // `fill(request, response)` (returning an absl::Status) on the read
  // executor as a read of `cost` (a KV read may be large; asking etcd for
  // the peers may wait)
  // and finishes the call with it.
  template <typename Request, typename Response, typename Fill>
  grpc::ServerUnaryReactor* Serve(Method method,
                                  grpc::CallbackServerContext* context,
                                  const grpc::ByteBuffer* request,
                                  grpc::ByteBuffer* response, ReadCost cost,
                                  Fill fill);

  const kv::KvBackend* const kv_;  // The in-memory KV; borrowed.
  const CallGate* const gate_;     // Who may call; borrowed.
  ReadExecutor* const reads_;      // Runs KV reads; borrowed.
  SelfDescription* const self_;    // This replica, for peers; borrowed.
  Metrics* const metrics_;         // KV read times; borrowed.
  const CallLimits limits_;        // Request size, reply budget.
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_SERVICES_CLUSTER_SERVICE_H_
