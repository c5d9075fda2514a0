// What a method registers with the dispatcher: how each transport makes the
// handler of one of its calls. The shapes (unary_call.h, stream_call.h,
// push_call.h) make both from one method; the services see neither.
#ifndef METASRV_SERVER_RPC_CALL_HANDLERS_H_
#define METASRV_SERVER_RPC_CALL_HANDLERS_H_

#include <cstddef>
#include <functional>
#include <optional>
#include <string>

#include "server/ops/call_metrics.h"
#include "server/rpc/call_door.h"
#include "server/rpc/call_ledger.h"
#include "server/rpc/h2_call.h"
#include "server/rpc/method_table.h"
#include "server/rpc/server_call.h"

namespace metasrv::server {

// What every call is held to.
struct CallLimits {
  // An inflated request, at most (--max_message_bytes, which declares the
  // default; 0 here until the server sets it).
  size_t max_request_bytes = 0;
  // Admission, the reply charge and the deadlines; null: every call is
  // served as admitted, nothing is charged or timed (tests of the runtime).
  CallDoor* door = nullptr;
};

// A call on the nghttp2 transport that the door let in, handed to its
// method's shape on the call's loop thread.
struct H2Start {
  H2Call* call = nullptr;        // The stream; its connection owns it.
  const MethodRow* row = nullptr;  // Its method.
  std::string peer;              // The socket's address, as gRPC writes it.
  // Its place in the ledger (none without a door).
  std::optional<CallLedger::Ticket> ticket;
  CallSeries* series = nullptr;  // Where it is counted; may be null.
  CallBook* book = nullptr;      // Calls alive, for shutdown; may be null.
};

// Makes the shape of a call on the nghttp2 transport; the shape owns
// itself from then on (it ends when its stream is closed).
using H2Factory = std::function<void(H2Start start)>;

// One method's handlers, one per transport.
struct MethodHandlers {
  CallHandlerFactory cq;  // gRPC 1.51's completion queue.
  H2Factory h2;           // nghttp2.
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_RPC_CALL_HANDLERS_H_
