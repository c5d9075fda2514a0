// What a call starts from: the call the door let in (H2Start), with its
// limits, and the factory a method registers with the dispatcher, which
// makes the call's shape from it. The shapes (unary_call.h, stream_call.h,
// push_call.h) make that factory from one method; the services see no
// transport.
#ifndef METASRV_SERVER_RPC_CALL_START_H_
#define METASRV_SERVER_RPC_CALL_START_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/ops/call_metrics.h"
#include "server/rpc/call_door.h"
#include "server/rpc/call_ledger.h"
#include "server/rpc/h2_call.h"
#include "server/rpc/method_table.h"

namespace metasrv::server {

// What every call is held to.
struct CallLimits {
  // An inflated request, at most: its method row's bound, else the
  // dispatcher's (--max_message_bytes).
  size_t max_request_bytes = 0;
  // Admission, the reply charge and the deadlines. Never null once the
  // dispatcher made the call (tests of the runtime alone pass an open door:
  // OpenDoorOptions()).
  CallDoor* door = nullptr;
};

// The call objects alive, refused ones too: what the shutdown waits for
// (the ledger, call_ledger.h, counts open calls). One per dispatcher.
// Thread-safe.
class CallBook {
 public:
  // Calls accepted and not yet deleted.
  int64_t live() const ABSL_LOCKS_EXCLUDED(mu_);
  // Waits until none is, at most until `deadline`; returns whether none is.
  bool WaitForNone(absl::Time deadline) const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  friend class H2DoorCall;
  void Enter() ABSL_LOCKS_EXCLUDED(mu_);
  void Leave() ABSL_LOCKS_EXCLUDED(mu_);

  mutable absl::Mutex mu_;                 // Guards live_.
  int64_t live_ ABSL_GUARDED_BY(mu_) = 0;  // Calls alive.
};

// A call on the nghttp2 transport that the door let in, handed to its
// method's shape on the call's loop thread.
struct H2Start {
  H2Call* call = nullptr;        // The stream; its connection owns it.
  const MethodRow* row = nullptr;  // Its method.
  CallLimits limits;               // What it is held to (the dispatcher's).
  std::string peer;              // The socket's address, as gRPC writes it.
  // Its place in the ledger (none for a method nobody serves).
  std::optional<CallLedger::Ticket> ticket;
  CallSeries* series = nullptr;  // Where it is counted; may be null.
  CallBook* book = nullptr;      // Calls alive, for shutdown; may be null.
};

// How one method's calls are served: makes the shape of a call on the
// nghttp2 transport, which owns itself from then on (it ends when its
// stream is closed).
using CallFactory = std::function<void(H2Start start)>;

}  // namespace metasrv::server

#endif  // METASRV_SERVER_RPC_CALL_START_H_
