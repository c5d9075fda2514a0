#include "server/ops/call_metrics.h"

#include <utility>

namespace metasrv::server {
namespace {

// gRPC's status code names, by number, as go-grpc-prometheus writes them.
constexpr std::array<const char*, 17> kCodes = {"OK",
                                                "Canceled",
                                                "Unknown",
                                                "InvalidArgument",
                                                "DeadlineExceeded",
                                                "NotFound",
                                                "AlreadyExists",
                                                "PermissionDenied",
                                                "ResourceExhausted",
                                                "FailedPrecondition",
                                                "Aborted",
                                                "OutOfRange",
                                                "Unimplemented",
                                                "Internal",
                                                "Unavailable",
                                                "DataLoss",
                                                "Unauthenticated"};

const char* TypeName(CallMetrics::Type type) {
  switch (type) {
    case CallMetrics::Type::kUnary:
      return "unary";
    case CallMetrics::Type::kClientStream:
      return "client_stream";
    case CallMetrics::Type::kServerStream:
      return "server_stream";
    case CallMetrics::Type::kBidiStream:
      return "bidi_stream";
  }
  return "unary";
}

// 100 µs to 10 s, then +Inf: unary calls land in the low buckets, a
// stream's whole life in the last.
prometheus::Histogram::BucketBoundaries HandlingBuckets() {
  return {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
          0.05,   0.1,     0.25,   0.5,   1,      2.5,   5,    10};
}

}  // namespace

void CallSeries::Handled(int code, absl::Duration took) {
  const size_t i = code >= 0 && code < 17 ? static_cast<size_t>(code) : 2;
  handled_[i]->Increment();
  seconds_->Observe(absl::ToDoubleSeconds(took));
}

CallMetrics::CallMetrics(prometheus::Registry* registry)
    : started_(&prometheus::BuildCounter()
                    .Name("grpc_server_started_total")
                    .Help("gRPC calls started, by method.")
                    .Register(*registry)),
      handled_(&prometheus::BuildCounter()
                    .Name("grpc_server_handled_total")
                    .Help("gRPC calls ended, by method and status code.")
                    .Register(*registry)),
      seconds_(&prometheus::BuildHistogram()
                    .Name("grpc_server_handling_seconds")
                    .Help("How long gRPC calls took, from start to status "
                          "(a stream's whole life), by method.")
                    .Register(*registry)) {}

CallSeries* CallMetrics::For(absl::string_view method, Type type) {
  {
    absl::ReaderMutexLock lock(&mu_);
    auto it = series_.find(method);
    if (it != series_.end()) return it->second.get();
  }
  absl::MutexLock lock(&mu_);
  auto it = series_.find(method);
  if (it != series_.end()) return it->second.get();  // Made meanwhile.
  // "/package.Service/Method"
  std::string service = "unknown", name(method);
  if (method.size() > 1 && method[0] == '/') {
    const size_t slash = method.find('/', 1);
    if (slash != absl::string_view::npos) {
      service = std::string(method.substr(1, slash - 1));
      name = std::string(method.substr(slash + 1));
    }
  }
  const prometheus::Labels labels = {{"grpc_type", TypeName(type)},
                                     {"grpc_service", service},
                                     {"grpc_method", name}};
  auto series = std::make_unique<CallSeries>();
  series->started_ = &started_->Add(labels);
  for (size_t code = 0; code < kCodes.size(); ++code) {
    prometheus::Labels with_code = labels;
    with_code["grpc_code"] = kCodes[code];
    series->handled_[code] = &handled_->Add(with_code);
  }
  series->seconds_ = &seconds_->Add(labels, HandlingBuckets());
  CallSeries* out = series.get();
  series_.emplace(std::string(method), std::move(series));
  return out;
}

}  // namespace metasrv::server
