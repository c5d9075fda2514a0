// The server-stream shape: one request, then messages pushed as the server
// has them, one write at a time. A method's logic is a PushCall::Handler
// that reads the request and chooses, when a write starts, which bytes to
// send for the newest item offered; the shape owns the call protocol: the
// request deadline, the one write in flight and the newest item waiting,
// the door's stall policy, the status sent exactly once, and ending the
// stream when told (AbortableStream) behind the write in flight.
//
// Messages are pre-serialised and shared (SharedMessage): a state sent to
// every watcher is encoded once, each write referring to the same slices.
#ifndef METASRV_SERVER_RPC_PUSH_CALL_H_
#define METASRV_SERVER_RPC_PUSH_CALL_H_

#include <grpc/byte_buffer.h>
#include <grpcpp/support/slice.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/rpc/call_handlers.h"
#include "server/rpc/grpc_status.h"
#include "server/rpc/raw_request.h"
#include "server/rpc/server_call.h"
#include "server/rpc/stream_end.h"
#include "server/rpc/unary_call.h"

namespace metasrv::server {

// One serialized message as gRPC core takes it, shared by every stream it
// is sent to: each write is given a copy that refers to the same slices.
// Thread-safe (immutable once built).
class SharedMessage {
 public:
  // Refers to `slices` (a message's bytes, in order); copies none.
  explicit SharedMessage(const std::vector<grpc::Slice>& slices);
  // A message's bytes, serialized.
  explicit SharedMessage(const google::protobuf::MessageLite& message);
  ~SharedMessage() { grpc_byte_buffer_destroy(raw_); }
  SharedMessage(const SharedMessage&) = delete;
  SharedMessage& operator=(const SharedMessage&) = delete;

  size_t Length() const { return grpc_byte_buffer_length(raw_); }
  // Its bytes as the nghttp2 transport sends them (shared, no copy).
  const std::vector<SharedBytes>& pieces() const { return pieces_; }

 private:
  friend class CqPushCall;
  // A new buffer for one write (the caller owns it; gRPC empties it).
  grpc_byte_buffer* NewWrite() const { return grpc_byte_buffer_copy(raw_); }

  grpc_byte_buffer* const raw_;  // Owned; never handed to gRPC itself.
  std::vector<SharedBytes> pieces_;  // The same bytes (references).
};

// Something a push stream is offered: the handler's own type, ordered by
// `sequence` (an older one offered after a newer one is dropped).
struct PushItem {
  virtual ~PushItem() = default;
  uint64_t sequence = 0;
};

// A server stream of pushed messages, as its method sees it on either
// transport. Abort() ends it behind the write in flight (a step-down,
// shutdown).
class PushCall : public virtual AbortableCall {
 public:
  // A method's logic, one per call.
  class Handler {
   public:
    virtual ~Handler() = default;
    // The request arrived: decode, admit, register. An error ends the call
    // with that status (GreptimeDB's metadata included); OK starts the
    // stream, which the handler may Offer() to at once, and attaches it to
    // its ledger entry (the ledger may end it from then on).
    virtual absl::Status OnRequest(const RawRequest& request,
                                   PushCall* call) = 0;
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
  using MakeHandler = std::function<std::unique_ptr<Handler>(ServerCall*)>;

  // Both transports' handlers of the method, for the dispatcher.
  static MethodHandlers Factory(CallLimits limits, MakeHandler make);

  virtual ~PushCall() = default;
  // The client's address ("ipv4:10.0.0.1:5000").
  virtual const std::string& peer() const = 0;
  // Sends `item` if no write is in flight, else keeps it as the next one
  // (replacing, and so skipping, an older one waiting: returns true then).
  // Items not newer than one offered before are dropped. A write that does
  // not complete within the door's stall limit ends the stream instead:
  // the client is not reading. Never blocks.
  virtual bool Offer(std::shared_ptr<const PushItem> item) = 0;
};

// The push shape on gRPC 1.51's completion queue.
class CqPushCall final : public PushCall, public CallHandler {
 public:
  CqPushCall(ServerCall* call, CallLimits limits,
             std::unique_ptr<Handler> handler);

  ServerCall* call() const { return call_; }
  const std::string& peer() const override { return call_->peer(); }
  // On this transport a write in flight past the door's stall limit ends
  // the stream only while answers exceed the reply budget
  // (CallDoor::Stalled).
  bool Offer(std::shared_ptr<const PushItem> item) override
      ABSL_LOCKS_EXCLUDED(mu_);

  void Start() override;
  void OnCancel() override;
  void OnDone() override;
  void Abort(const absl::Status& status) override { End(ToGrpcStatus(status)); }

 private:
  void OnRead(bool ok);
  void OnWriteDone(bool ok) ABSL_LOCKS_EXCLUDED(mu_);
  void OnSent(bool) {}
  // Makes `item` the write in flight if its handler gives bytes for it;
  // returns whether a write must start.
  bool StartWriteOf(std::shared_ptr<const PushItem> item)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Hands write_buffer_ to gRPC (one core batch). Call without mu_ held.
  void Write();
  // Ends a stream whose client does not read: cancels the call with
  // RESOURCE_EXHAUSTED (sent even to a zero window, ahead of the data), so
  // that its write in flight completes and what it holds is freed.
  void EndStalled();
  // Ends the stream with `status` behind the write in flight, if any.
  void End(const grpc::Status& status) ABSL_LOCKS_EXCLUDED(mu_);
  void FinishOnce(const grpc::Status& status) ABSL_LOCKS_EXCLUDED(mu_);
  void StartFinish(const grpc::Status& status);

  ServerCall* const call_;            // The call; owns this.
  const CallLimits limits_;           // Request size; the door.
  std::unique_ptr<Handler> handler_;  // The method's logic.
  bool attached_ = false;             // To its ledger entry, by OnRead().
  grpc::ByteBuffer request_;          // The request's bytes, until read.
  CallOp<CqPushCall> read_;           // The request read.
  CallOp<CqPushCall> metadata_;       // The headers sent.
  CallOp<CqPushCall> written_;        // A message written.
  CallOp<CqPushCall> finished_;       // The status sent.

  absl::Mutex mu_;  // Guards the fields below; never held into gRPC calls.
  // The bytes being written (owned); assigned only while no write is in
  // flight, and destroyed when it completes.
  grpc_byte_buffer* write_buffer_ = nullptr;
  // The item write_buffer_ is of, held until the write completes.
  std::shared_ptr<const PushItem> in_flight_ ABSL_GUARDED_BY(mu_);
  absl::Time write_started_ ABSL_GUARDED_BY(mu_);  // Of the write in flight.
  StreamEnd end_ ABSL_GUARDED_BY(mu_);         // Write in flight, finishing.
  bool started_ ABSL_GUARDED_BY(mu_) = false;  // Headers sent; may write.
  // The newest sequence accepted; nullopt before the first.
  std::optional<uint64_t> offered_ ABSL_GUARDED_BY(mu_);
  // The next item to send once the write in flight completes.
  std::shared_ptr<const PushItem> next_ ABSL_GUARDED_BY(mu_);
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_RPC_PUSH_CALL_H_
