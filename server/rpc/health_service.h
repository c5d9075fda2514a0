// grpc.health.v1.Health, answered as gRPC's default health service answers
// it (which is a callback service: registering it would bring back gRPC's
// two callback threads). One service is known, "" (the whole server), as in
// gRPC's default: Check of another name is NOT_FOUND "service name
// unknown", Watch of another name says SERVICE_UNKNOWN.
#ifndef METASRV_SERVER_RPC_HEALTH_SERVICE_H_
#define METASRV_SERVER_RPC_HEALTH_SERVICE_H_

#include <atomic>
#include <cstdint>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "grpc/health/v1/health.pb.h"
#include "server/rpc/call_dispatcher.h"
#include "server/rpc/push_call.h"
#include "server/rpc/stream_registry.h"
#include "server/rpc/unary_call.h"

namespace metasrv::server {

// Thread-safe.
class HealthService {
 public:
  using ServingStatus = grpc::health::v1::HealthCheckResponse::ServingStatus;

  // At most `max_watchers` Watch streams at once (more are refused with
  // RESOURCE_EXHAUSTED).
  explicit HealthService(uint64_t max_watchers = 10000);

  // Serves Check and Watch through `dispatcher`, their requests held to
  // `limits`.
  void Register(CallDispatcher* dispatcher, CallLimits limits);

  // The server serves (SERVING) or not (NOT_SERVING). Watchers are told.
  // Ignored after Shutdown().
  void SetServing(bool serving) ABSL_LOCKS_EXCLUDED(mu_);
  // NOT_SERVING for good: watchers are told, then their streams end.
  void Shutdown() ABSL_LOCKS_EXCLUDED(mu_);

  // The status of `service` now; SERVICE_UNKNOWN for a name not known.
  ServingStatus StatusOf(const std::string& service) const
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  class Watcher;
  using CheckCall = UnaryCall<grpc::health::v1::HealthCheckRequest,
                              grpc::health::v1::HealthCheckResponse>;
  void Check(CheckCall* call) const;
  // Offers the status now to every watcher.
  void Tell() ABSL_LOCKS_EXCLUDED(mu_);
  // A new item for the watchers: the status may have changed.
  std::shared_ptr<const PushItem> Change();

  mutable absl::Mutex mu_;                       // Guards the fields below.
  bool serving_ ABSL_GUARDED_BY(mu_) = false;    // What "" answers.
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;  // Shutdown() was called.
  StreamRegistry watchers_;                      // The Watch streams' calls.
  std::atomic<uint64_t> changes_{0};             // Items made by Change().
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_RPC_HEALTH_SERVICE_H_
