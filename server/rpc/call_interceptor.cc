#include "server/rpc/call_interceptor.h"

#include "absl/time/clock.h"

namespace metasrv::server {
namespace {

using grpc::experimental::InterceptionHookPoints;
using grpc::experimental::ServerRpcInfo;

CallMetrics::Type TypeOf(ServerRpcInfo::Type type) {
  switch (type) {
    case ServerRpcInfo::Type::UNARY:
      return CallMetrics::Type::kUnary;
    case ServerRpcInfo::Type::CLIENT_STREAMING:
      return CallMetrics::Type::kClientStream;
    case ServerRpcInfo::Type::SERVER_STREAMING:
      return CallMetrics::Type::kServerStream;
    case ServerRpcInfo::Type::BIDI_STREAMING:
      return CallMetrics::Type::kBidiStream;
  }
  return CallMetrics::Type::kUnary;
}

// One call: started when made, handled with the status it sends, or as
// cancelled when it ends without sending one (the client went away).
class CallMetricsInterceptor final : public grpc::experimental::Interceptor {
 public:
  explicit CallMetricsInterceptor(CallSeries* series)
      : series_(series), start_(absl::Now()) {
    series_->Started();
  }
  ~CallMetricsInterceptor() override {
    series_->Handled(code_, absl::Now() - start_);
  }

  void Intercept(
      grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(
            InterceptionHookPoints::PRE_SEND_STATUS)) {
      code_ = static_cast<int>(methods->GetSendStatus().error_code());
    }
    methods->Proceed();
  }

 private:
  CallSeries* const series_;  // The method's series; borrowed.
  const absl::Time start_;    // When the call was made.
  int code_ = static_cast<int>(grpc::StatusCode::CANCELLED);  // Until sent.
};

}  // namespace

grpc::experimental::Interceptor*
CallMetricsInterceptorFactory::CreateServerInterceptor(ServerRpcInfo* info) {
  for (const std::string& method : self_counted_) {
    if (method == info->method()) return nullptr;
  }
  return new CallMetricsInterceptor(
      metrics_->For(info->method(), TypeOf(info->type())));
}

}  // namespace metasrv::server
