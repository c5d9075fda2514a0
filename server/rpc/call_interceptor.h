// Counts and times every gRPC call of the server (CallMetrics), whatever
// its service: one interceptor per call, made by this factory, which
// ServerBuilder installs in front of every service.
#ifndef METASRV_SERVER_RPC_CALL_INTERCEPTOR_H_
#define METASRV_SERVER_RPC_CALL_INTERCEPTOR_H_

#include <grpcpp/support/server_interceptor.h>

#include "server/ops/call_metrics.h"

namespace metasrv::server {

// Thread-safe. Borrows `metrics`, which must outlive every call.
class CallMetricsInterceptorFactory final
    : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit CallMetricsInterceptorFactory(CallMetrics* metrics)
      : metrics_(metrics) {}

  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override;

 private:
  CallMetrics* const metrics_;  // Where calls are counted; borrowed.
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_RPC_CALL_INTERCEPTOR_H_
