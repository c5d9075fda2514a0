// The server-stream shape: one request, then messages pushed as the server
// has them, one write at a time. A method's logic is a PushCall::Handler
// that reads the request and chooses, when a write starts, which bytes to
// send for the newest item offered; the shape owns the call protocol: the
// request deadline, the one write in flight and the newest item waiting,
// the door's stall policy, the status sent exactly once, and ending the
// stream when told (AbortableCall) behind the write in flight.
//
// Messages are pre-serialised and shared (SharedMessage): a state sent to
// every watcher is encoded once, each write referring to the same slices.
//
// What its answers are charged: nothing per stream at the door's exit
// (CallDoor::TakeReply), since one message's bytes are shared by every
// stream writing it. Its owner holds them in the reply budget once
// (CallDoor::HoldShared: the watch hub, from when a newer state supersedes
// one until the last stream writing it lets go), never to one host's
// share. A stream is started only while the budget is not exceeded (unless
// its method is always answered), holds at most one write and one waiting
// item, and is ended when a write is not taken within the stall limit.
#ifndef METASRV_SERVER_RPC_PUSH_CALL_H_
#define METASRV_SERVER_RPC_PUSH_CALL_H_

#include <google/protobuf/message_lite.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "server/rpc/h2_door_call.h"
#include "server/rpc/raw_request.h"
#include "server/rpc/shared_bytes.h"

namespace metasrv::server {

// One serialized message, shared by every stream it is sent to: each write
// refers to the same bytes. Thread-safe (immutable once built).
class SharedMessage {
 public:
  // Refers to `pieces` (a message's bytes, in order); copies none.
  explicit SharedMessage(SharedPieces pieces);
  // A message's bytes, serialized.
  explicit SharedMessage(const google::protobuf::MessageLite& message);
  SharedMessage(const SharedMessage&) = delete;
  SharedMessage& operator=(const SharedMessage&) = delete;

  size_t Length() const { return length_; }
  // Its bytes as the transport sends them (shared, no copy).
  const SharedPieces& pieces() const { return pieces_; }

 private:
  SharedPieces pieces_;  // The bytes, in order (references).
  size_t length_ = 0;    // Theirs, in all.
};

// Something a push stream is offered: the handler's own type, ordered by
// `sequence` (an older one offered after a newer one is dropped).
struct PushItem {
  virtual ~PushItem() = default;
  uint64_t sequence = 0;
};

// A server stream of pushed messages, as its method sees it. Abort() ends
// it behind the write in flight (a step-down, shutdown).
class PushCall final : public H2DoorCall {
 public:
  // A method's logic, one per call.
  class Handler {
   public:
    virtual ~Handler() = default;
    // Where the request is decoded to (the handler's own message).
    virtual google::protobuf::MessageLite* request() = 0;
    // The request arrived, was decoded into request() within its method's
    // bound and admitted by its leader policy (and, unless its method is
    // always answered, while answers in flight fit the reply budget):
    // register. An error ends the call with that status (GreptimeDB's
    // metadata included); OK starts the stream, which the handler may
    // Offer() to at once, and attaches it to its ledger entry (the ledger
    // may end it from then on).
    virtual absl::Status OnRequest(PushCall* call) = 0;
    // A write of `item` starts: the bytes to send for it, or null to send
    // nothing. Called under the call's lock, one at a time: it must not
    // block or call back into the call. The message must live until the
    // next Choose() (the write takes its own reference at once).
    virtual const SharedMessage* Choose(const PushItem& item) = 0;
    // The stream was ended because its client did not read (the door's
    // stall policy).
    virtual void OnStalled() {}
    // The call is over: nothing more is called.
    virtual void OnClose() {}
  };
  // Makes the logic of one call.
  using MakeHandler = std::function<std::unique_ptr<Handler>()>;

  // The handler of the method, for the dispatcher.
  static CallFactory Factory(MakeHandler make);

  // peer() (H2DoorCall): the client's address ("ipv4:10.0.0.1:5000").
  // Sends `item` if no write is in flight, else keeps it as the next one
  // (replacing, and so skipping, an older one waiting: returns true then).
  // Items not newer than one offered before are dropped. A write that does
  // not complete within the door's stall limit ends the stream instead:
  // the client is not reading. Never blocks.
  bool Offer(std::shared_ptr<const PushItem> item) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  PushCall(H2Start start, std::unique_ptr<Handler> handler)
      : H2DoorCall(std::move(start)), handler_(std::move(handler)) {}
  // DecodeAndAdmit(), and refused while answers unread hold more than the
  // reply budget (a stream that does not read is not started then).
  absl::Status Admit(Compression compression, const std::string& message);

  void OnMessage(H2Call* stream, Compression compression,
                 std::string message) override;
  void OnHalfClose(H2Call*) override {}  // It has its one request.
  void OnDrained(H2Call* stream) override;
  void OnEnded() override;
  // The bytes for `item`, if its handler gives any: the write in flight.
  std::optional<std::vector<SharedBytes>> Choose(
      std::shared_ptr<const PushItem> item) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  std::unique_ptr<Handler> handler_;  // The method's logic.

  absl::Mutex mu_;  // Guards the fields below; never held into the loop.
  bool started_ ABSL_GUARDED_BY(mu_) = false;  // Its request was accepted.
  bool over_ ABSL_GUARDED_BY(mu_) = false;     // Its stream ended.
  // The item being written, until its bytes left.
  std::shared_ptr<const PushItem> in_flight_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<const PushItem> next_ ABSL_GUARDED_BY(mu_);
  std::optional<uint64_t> offered_ ABSL_GUARDED_BY(mu_);  // Newest sequence.
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_RPC_PUSH_CALL_H_
