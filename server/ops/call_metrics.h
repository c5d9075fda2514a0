// Per-method gRPC call metrics under the names Prometheus users know from
// go-grpc-prometheus: grpc_server_started_total, grpc_server_handled_total
// (by code) and grpc_server_handling_seconds, each labelled grpc_type,
// grpc_service and grpc_method.
#ifndef METASRV_SERVER_OPS_CALL_METRICS_H_
#define METASRV_SERVER_OPS_CALL_METRICS_H_

#include <array>
#include <atomic>
#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace metasrv::server {

// The series of one method. Stable for the life of the CallMetrics; every
// method is safe from any thread and takes no lock.
class CallSeries {
 public:
  // A call of this method began.
  void Started() { started_->Increment(); }
  // It ended with gRPC status `code` (0..16; others count as UNKNOWN) after
  // `took`.
  void Handled(int code, absl::Duration took);

 private:
  friend class CallMetrics;
  prometheus::Counter* started_ = nullptr;  // grpc_server_started_total.
  std::array<prometheus::Counter*, 17> handled_{};  // By code.
  prometheus::Histogram* seconds_ = nullptr;  // grpc_server_handling_seconds.
};

// One call of a method that counts itself rather than through the
// interceptor (a stream, on which an interceptor would run for every
// message): started when made, handled at Done() with the code given to
// Finishing(), or CANCELLED if it never finished (the client went away).
// Thread safety: Finishing() and Done() may run on any thread.
class SelfCountedCall {
 public:
  // `series` is borrowed; null: nothing is counted.
  explicit SelfCountedCall(CallSeries* series)
      : series_(series), started_(absl::Now()) {
    if (series_ != nullptr) series_->Started();
  }
  // The call is about to finish with gRPC status `code`.
  void Finishing(int code) { code_.store(code); }
  // The call is over (its stream closed).
  void Done() {
    if (series_ != nullptr)
      series_->Handled(code_.load(), absl::Now() - started_);
  }

 private:
  CallSeries* const series_;  // The method's series; borrowed, or null.
  const absl::Time started_;  // When the call came.
  std::atomic<int> code_{1};  // CANCELLED until Finishing() says otherwise.
};

// Thread-safe.
class CallMetrics {
 public:
  // gRPC's call types, as go-grpc-prometheus names them.
  enum class Type { kUnary, kClientStream, kServerStream, kBidiStream };

  // Registers the families in `registry`, which must outlive this.
  explicit CallMetrics(prometheus::Registry* registry);

  // The series of `method` ("/package.Service/Method"), made on first use.
  // A name that is not of that form is counted under service "unknown".
  CallSeries* For(absl::string_view method, Type type) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  prometheus::Family<prometheus::Counter>* started_;    // In the registry.
  prometheus::Family<prometheus::Counter>* handled_;    // In the registry.
  prometheus::Family<prometheus::Histogram>* seconds_;  // In the registry.
  absl::Mutex mu_;                                      // Guards series_.
  // By method name; values never move.
  absl::flat_hash_map<std::string, std::unique_ptr<CallSeries>> series_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_OPS_CALL_METRICS_H_
