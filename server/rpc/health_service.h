// grpc.health.v1.Health, answered as gRPC's default health service answers
// it (which is a callback service: registering it would bring back gRPC's
// two callback threads). One service is known, "" (the whole server), as in
// gRPC's default: Check of another name is NOT_FOUND "service name
// unknown", Watch of another name says SERVICE_UNKNOWN.
#ifndef METASRV_SERVER_RPC_HEALTH_SERVICE_H_
#define METASRV_SERVER_RPC_HEALTH_SERVICE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "grpc/health/v1/health.pb.h"
#include "server/rpc/call_dispatcher.h"
#include "server/rpc/push_call.h"
#include "server/rpc/unary_call.h"

namespace metasrv::server {

// Thread-safe.
class HealthService {
 public:
  using ServingStatus = grpc::health::v1::HealthCheckResponse::ServingStatus;

  // (The door bounds how many Watch streams are open: --max_streams.)
  // `refusing` (may be empty) says whether the port turns away every new
  // call of a kind that matters (CallDoor::Refusing): Check answers
  // NOT_SERVING meanwhile.
  explicit HealthService(std::function<bool()> refusing = {});

  // Serves Check and Watch through `dispatcher` (their rows bound their
  // requests).
  void Register(CallDispatcher* dispatcher);

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

  const std::function<bool()> refusing_;  // See the constructor.
  mutable absl::Mutex mu_;                       // Guards the fields below.
  bool serving_ ABSL_GUARDED_BY(mu_) = false;    // What "" answers.
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;  // Shutdown() was called.
  // Guards watchers_; taken before a watcher's own lock.
  absl::Mutex watchers_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  // The Watch streams to tell, from their request to their end.
  absl::flat_hash_set<PushCall*> watchers_ ABSL_GUARDED_BY(watchers_mu_);
  bool closed_ ABSL_GUARDED_BY(watchers_mu_) = false;  // By Shutdown().
  std::atomic<uint64_t> changes_{0};             // Items made by Change().
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_RPC_HEALTH_SERVICE_H_
