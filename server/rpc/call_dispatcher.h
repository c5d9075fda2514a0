// Every call the server serves comes through here: the transport hands each
// stream over at its HEADERS (CallSink), it is looked up in the method table
// (method_table.h), charged and checked at the door (call_door.h) before
// anything is queued, and handed to its method's handler, counted by method
// and code. A refused call is finished at once with the door's status,
// before any handler exists. A method nobody registered is answered
// UNIMPLEMENTED, as gRPC answers it.
#ifndef METASRV_SERVER_RPC_CALL_DISPATCHER_H_
#define METASRV_SERVER_RPC_CALL_DISPATCHER_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/time/time.h"
#include "server/ops/call_metrics.h"
#include "server/rpc/call_door.h"
#include "server/rpc/method_table.h"
#include "server/rpc/call_start.h"
#include "server/rpc/h2_transport.h"

namespace metasrv::server {

// Thread safety: Add() before the transport starts; the rest from any
// thread. The transport's calls come through OnCall(), on their loop
// threads.
class CallDispatcher final : public CallSink {
 public:

  // Counts calls in `metrics` (null: not counted) and admits them through
  // `door` (not null: tests of the runtime alone pass an open one,
  // OpenDoorOptions()); both must outlive this. A request inflates to at most
  // `max_request_bytes` (--max_message_bytes) unless its method's row says
  // less. The shapes apply these limits (H2Start::limits): the dispatcher
  // owns them, the services name none.
  CallDispatcher(CallMetrics* metrics, CallDoor* door,
                 size_t max_request_bytes = 4 << 20);
  ~CallDispatcher();
  CallDispatcher(const CallDispatcher&) = delete;
  CallDispatcher& operator=(const CallDispatcher&) = delete;

  // Serves `method` (its path and kind are its row's) with `make` (the
  // shapes' Factory() makes it).
  void Add(Method method, CallFactory make);
  // Whether `method` is served.
  bool Serves(Method method) const {
    return methods_.contains(RowOf(method).path);
  }

  // Waits until no accepted call is alive (each finished or was cancelled,
  // and its stream closed), at most until `deadline`. Returns whether none
  // is. The transport's loops must still run meanwhile.
  bool WaitForCalls(absl::Time deadline) const;
  // Calls accepted and alive now.
  int64_t live_calls() const { return book_.live(); }

  // CallSink: a call on the nghttp2 transport, at its HEADERS.
  void OnCall(H2Call* call, const PeerAddress& peer) override;
  // A connection nghttp2 closed for resetting calls too fast (or a header
  // block without end): counted and logged as a rapid reset.
  // Counted as the door's refusals are (and told to readiness).
  void OnRefused(H2Call* call, TransportRefusal why,
                 const absl::Status& status) override;
  void OnConnectionCut(const PeerAddress& peer) override;
  // Counted, and logged per host at a limited rate.
  void OnConnectionEvicted(const std::string& host) override;
  void OnConnectionRefused(const std::string& host, bool slowed) override;
  // The door every call comes through.
  const CallDoor& door() const { return *door_; }
  // Sweeps the door (silent streams) on `transport`'s first loop. Once.
  void SweepOn(H2Transport* transport);

 private:
  struct Entry {
    const MethodRow* row;  // The method's row.
    CallFactory make;      // Makes its calls' shape.
    CallSeries* series;    // Its call metrics; null when not counted.
  };

  CallBook book_;                      // Live calls; metrics.
  CallMetrics* const metrics_;         // May be null.
  CallDoor* const door_;               // Never null.
  const size_t max_request_bytes_;     // Unless a row says less.
  // By method path; filled before the transport starts, then only read.
  absl::flat_hash_map<std::string_view, Entry> methods_;
  CallSeries* unknown_series_ = nullptr;  // Unregistered methods' metrics.
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_RPC_CALL_DISPATCHER_H_
