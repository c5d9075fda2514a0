// Every call the server serves comes through here: one generic async
// service accepts them, each is looked up in the method table
// (method_table.h), charged and checked at the door (call_door.h) the moment
// it is accepted, and handed to its method's handler, counted by method and
// code. A refused call is finished at once with the door's status, before
// any handler exists. A method nobody registered is answered UNIMPLEMENTED,
// as gRPC answers it.
#ifndef METASRV_SERVER_RPC_CALL_DISPATCHER_H_
#define METASRV_SERVER_RPC_CALL_DISPATCHER_H_

#include <grpcpp/generic/async_generic_service.h>

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/time/time.h"
#include "server/ops/call_metrics.h"
#include "server/rpc/call_door.h"
#include "server/rpc/method_table.h"
#include "server/rpc/call_handlers.h"
#include "server/rpc/h2_transport.h"
#include "server/rpc/server_call.h"

namespace metasrv::server {

// Thread safety: Add() before Start(); the rest from any thread.
// Also the nghttp2 transport's sink: its calls come through OnCall(), on
// their loop threads, past the same door.
class CallDispatcher final : public CallSink {
 public:
  using Factory = MethodHandlers;

  // Counts calls in `metrics` (null: not counted) and admits them through
  // `door` (null: every call is admitted, for tests of the runtime alone);
  // both must outlive this.
  CallDispatcher(CallMetrics* metrics, CallDoor* door);
  ~CallDispatcher();
  CallDispatcher(const CallDispatcher&) = delete;
  CallDispatcher& operator=(const CallDispatcher&) = delete;

  // Serves `method` (its path and kind are its row's) with `make` (one
  // handler per transport; the shapes' Factory() makes both).
  void Add(Method method, Factory make);
  // Whether `method` is served.
  bool Serves(Method method) const {
    return methods_.contains(RowOf(method).path);
  }

  // The service to register with the server builder.
  grpc::AsyncGenericService* service() { return &service_; }
  // Starts accepting calls, their operations completing on `cq` (the
  // server's, polled by a CqPoller), and sweeping the door (CallDoor::Sweep)
  // on an alarm on `cq`. Call once the server is started.
  void Start(grpc::ServerCompletionQueue* cq);
  // Stops the sweep, waiting for its alarm (the queue must still be
  // polled). Call before the server shuts down; idempotent.
  void StopSweeping();
  // Waits until no accepted call is alive (each finished or was cancelled,
  // and its last operation completed), at most until `deadline`. Returns
  // whether none is. The queue must still be polled meanwhile.
  bool WaitForCalls(absl::Time deadline) const;
  // Calls accepted and alive now.
  int64_t live_calls() const { return book_.live(); }
  // `close(peer)` closes a client's connection (GrpcAcceptor::Disconnect):
  // called for a connection the door says resets calls too fast
  // (CallDoor::ResetEarly). Before Start().
  void SetConnectionCloser(std::function<bool(const std::string&)> close);

  // CallSink: a call on the nghttp2 transport, at its HEADERS.
  void OnCall(H2Call* call, const std::string& peer) override;
  // Counted and logged as gRPC 1.51's rapid resets are.
  void OnConnectionCut(const std::string& peer) override;
  // Sweeps the door (silent streams) on `transport`'s first loop. Once.
  void SweepOn(H2Transport* transport);

 private:
  // One request for the next call, renewed each time a call comes.
  class Acceptor;
  class Sweeper;
  struct Entry {
    const MethodRow* row;  // The method's row.
    Factory make;          // Its handlers.
    CallSeries* series;    // Its call metrics; null when not counted.
  };
  // An accepted call: handed to its method's handler.
  void Dispatch(ServerCall* call);

  grpc::AsyncGenericService service_;  // Takes every call.
  CallBook book_;                      // Live calls; metrics.
  CallMetrics* const metrics_;         // May be null.
  CallDoor* const door_;               // May be null.
  // By method path; filled before Start(), then only read.
  absl::flat_hash_map<std::string_view, Entry> methods_;
  CallSeries* unknown_series_ = nullptr;  // Unregistered methods' metrics.
  std::vector<std::unique_ptr<Acceptor>> acceptors_;  // Requests out.
  std::unique_ptr<Sweeper> sweeper_;  // With a door, once started.
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_RPC_CALL_DISPATCHER_H_
