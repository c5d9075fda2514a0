// Every call the server serves comes through here: one generic async
// service accepts them, and each goes to its method's handler, counted by
// method and code. A method nobody registered is answered UNIMPLEMENTED, as
// gRPC answers it.
#ifndef METASRV_SERVER_RPC_CALL_DISPATCHER_H_
#define METASRV_SERVER_RPC_CALL_DISPATCHER_H_

#include <grpcpp/generic/async_generic_service.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/time/time.h"
#include "server/ops/call_metrics.h"
#include "server/rpc/server_call.h"

namespace metasrv::server {

// Thread safety: Add() before Start(); the rest from any thread.
class CallDispatcher {
 public:
  using Factory = CallHandlerFactory;

  // Counts calls in `metrics` (null: not counted), which must outlive this.
  explicit CallDispatcher(CallMetrics* metrics);
  ~CallDispatcher();
  CallDispatcher(const CallDispatcher&) = delete;
  CallDispatcher& operator=(const CallDispatcher&) = delete;

  // Serves `method` ("/package.Service/Method"), of `type`, with `make`.
  void Add(const std::string& method, CallMetrics::Type type, Factory make);
  // Whether `method` is served.
  bool Serves(const std::string& method) const {
    return methods_.contains(method);
  }

  // The service to register with the server builder.
  grpc::AsyncGenericService* service() { return &service_; }
  // Starts accepting calls, their operations completing on `cq` (the
  // server's, polled by a CqPoller). Call once the server is started.
  void Start(grpc::ServerCompletionQueue* cq);
  // Waits until no accepted call is alive (each finished or was cancelled,
  // and its last operation completed), at most until `deadline`. Returns
  // whether none is. The queue must still be polled meanwhile.
  bool WaitForCalls(absl::Time deadline) const;
  // Calls accepted and alive now.
  int64_t live_calls() const { return book_.live(); }

 private:
  // One request for the next call, renewed each time a call comes.
  class Acceptor;
  struct Entry {
    Factory make;        // The method's handler.
    CallSeries* series;  // Its call metrics; null when not counted.
  };
  // An accepted call: handed to its method's handler.
  void Dispatch(ServerCall* call);

  grpc::AsyncGenericService service_;  // Takes every call.
  CallBook book_;                      // Live calls; metrics.
  CallMetrics* const metrics_;         // May be null.
  // By method path; filled before Start(), then only read.
  absl::flat_hash_map<std::string, Entry> methods_;
  CallSeries* unknown_series_ = nullptr;  // Unregistered methods' metrics.
  std::vector<std::unique_ptr<Acceptor>> acceptors_;  // Requests out.
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_RPC_CALL_DISPATCHER_H_
