// The greptime.v1.meta.Cluster service: reads of the in-memory KV.
#ifndef METASRV_SERVER_CLUSTER_SERVICE_H_
#define METASRV_SERVER_CLUSTER_SERVICE_H_

#include "core/leadership.h"
#include "greptime/v1/meta/cluster.grpc.pb.h"
#include "kv/kv_backend.h"
#include "server/arena_allocator.h"
#include "server/read_executor.h"

namespace metasrv::server {

// Facts about this replica for MetasrvPeers.
struct SelfInfo {
  std::string addr;            // Advertised address.
  std::string version;         // Build version.
  uint64_t start_time_ms = 0;  // When the process started (unix ms).
  std::string hostname;        // Host name.
};

class ClusterService final : public greptime::v1::meta::Cluster::CallbackService {
 public:
  // Borrows `kv`, `leadership` and `reads`; they must outlive the service.
  // KV reads run on `reads`.
  ClusterService(const kv::KvBackend* kv, const core::Leadership* leadership,
                 ReadExecutor* reads, SelfInfo self);

  grpc::ServerUnaryReactor* BatchGet(
      grpc::CallbackServerContext* context,
      const greptime::v1::meta::BatchGetRequest* request,
      greptime::v1::meta::BatchGetResponse* response) override;
  grpc::ServerUnaryReactor* Range(
      grpc::CallbackServerContext* context,
      const greptime::v1::meta::RangeRequest* request,
      greptime::v1::meta::RangeResponse* response) override;
  grpc::ServerUnaryReactor* MetasrvPeers(
      grpc::CallbackServerContext* context,
      const greptime::v1::meta::MetasrvPeersRequest* request,
      greptime::v1::meta::MetasrvPeersResponse* response) override;

 private:
  // Checks the header and leadership, and fills the response header. Returns
  // false when the call is already answered: an error status (bad header), or
  // OK with the not-leader error in `header`.
  bool Admit(grpc::CallbackServerContext* context, bool has_header,
             greptime::v1::meta::ResponseHeader* header,
             grpc::ServerUnaryReactor** reactor) const;

  // Admits the call, then runs `fill(request, response)` (returning an
  // absl::Status) on the read executor and finishes the call with it.
  template <typename Request, typename Response, typename Fill>
  grpc::ServerUnaryReactor* ServeRead(grpc::CallbackServerContext* context,
                                      const Request* request, Response* response,
                                      Fill fill);

  const kv::KvBackend* const kv_;             // The in-memory KV; borrowed.
  const core::Leadership* const leadership_;  // Who leads; borrowed.
  ReadExecutor* const reads_;                 // Runs KV reads; borrowed.
  const SelfInfo self_;                       // This replica, for peers.
  ArenaMessageAllocator<greptime::v1::meta::RangeRequest,
                        greptime::v1::meta::RangeResponse>
      range_allocator_;  // Range answers can hold many keys.
  ArenaMessageAllocator<greptime::v1::meta::BatchGetRequest,
                        greptime::v1::meta::BatchGetResponse>
      batch_get_allocator_;  // Likewise.
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_CLUSTER_SERVICE_H_
