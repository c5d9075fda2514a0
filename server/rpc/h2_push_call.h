// The push shape on the nghttp2 transport: one request, then the messages
// its method offers, one write in flight and the newest item waiting. A
// write not out within the transport's stall limit (--reply_stall_limit)
// resets the stream, whatever the windows: its client is not reading.
#ifndef METASRV_SERVER_RPC_H2_PUSH_CALL_H_
#define METASRV_SERVER_RPC_H2_PUSH_CALL_H_

#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "server/rpc/h2_door_call.h"
#include "server/rpc/push_call.h"

namespace metasrv::server {

// Thread safety: Offer() from any thread; the rest on the call's loop.
class H2PushCall final : public PushCall, public H2DoorCall {
 public:
  // Takes the call the door let in; it owns itself.
  static void Start(H2Start start, std::unique_ptr<Handler> handler);

  const std::string& peer() const override { return H2DoorCall::peer(); }
  bool Offer(std::shared_ptr<const PushItem> item) override
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  H2PushCall(H2Start start, std::unique_ptr<Handler> handler)
      : H2DoorCall(std::move(start)), handler_(std::move(handler)) {}
  // Decodes and admits the request (push_call.h, Handler::OnRequest).
  absl::Status Admit(const std::string& message);

  void OnMessage(H2Call* stream, bool compressed,
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

#endif  // METASRV_SERVER_RPC_H2_PUSH_CALL_H_
