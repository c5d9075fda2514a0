// Counts and times every gRPC call of the server (CallMetrics), whatever
// its service: one interceptor per call, made by this factory, which
// ServerBuilder installs in front of every service.
#ifndef METASRV_SERVER_RPC_CALL_INTERCEPTOR_H_
#define METASRV_SERVER_RPC_CALL_INTERCEPTOR_H_

#include <grpcpp/support/server_interceptor.h>

#include <string>
#include <utility>
#include <vector>

#include "server/ops/call_metrics.h"

namespace metasrv::server {

// Thread-safe. Borrows `metrics`, which must outlive every call. Methods in
// `self_counted` get no interceptor: an interceptor runs on every message
// of a stream (a fifth of the heartbeat path's throughput), so the
// heartbeat stream counts itself into the same series.
class CallMetricsInterceptorFactory final
    : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  CallMetricsInterceptorFactory(CallMetrics* metrics,
                                std::vector<std::string> self_counted)
      : metrics_(metrics), self_counted_(std::move(self_counted)) {}

  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override;

 private:
  CallMetrics* const metrics_;  // Where calls are counted; borrowed.
  const std::vector<std::string> self_counted_;  // Full method names.
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_RPC_CALL_INTERCEPTOR_H_
