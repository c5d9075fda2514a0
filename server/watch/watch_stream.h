// WatchStream: one WatchFlowState call, the handler the WatchHub offers
// states to (see flow_state_watch.h for what is sent and when).
#ifndef METASRV_SERVER_WATCH_WATCH_STREAM_H_
#define METASRV_SERVER_WATCH_WATCH_STREAM_H_

#include <grpc/byte_buffer.h>
#include <grpcpp/support/byte_buffer.h>

#include <cstdint>
#include <memory>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/ops/metrics.h"
#include "server/rpc/call_door.h"
#include "server/rpc/server_call.h"
#include "server/rpc/stream_end.h"
#include "server/rpc/stream_registry.h"
#include "server/watch/flow_state_watch.h"

namespace metasrv::server {

// One WatchFlowState call: reads its request, then writes the states the
// hub offers, one write at a time.
class WatchStream final : public CallHandler, public AbortableStream {
 public:
  // Borrows all (`call` owns this). Admits the call through `door` (null:
  // admitted), decodes
  // its request (at most `max_request_bytes` inflated), registers with `hub`
  // and sends the current state; with `deltas` asked, later messages are
  // changes where they can be. Ends at once with RESOURCE_EXHAUSTED while
  // the hub is over its budget.
  WatchStream(ServerCall* call, WatchHub* hub, const CallDoor* door,
              size_t max_request_bytes, Metrics* metrics);

  ServerCall* call() const { return call_; }

  // Sends `snapshot` if no write is in flight, else keeps it as the next to
  // send (replacing, and so skipping, any older one waiting). States not
  // newer than one already offered are dropped. A write in flight past the
  // hub's stall limit while it is over budget ends the stream instead.
  // Never blocks.
  void Offer(std::shared_ptr<const WatchSnapshot> snapshot);

  uint64_t ordinal() const { return ordinal_; }
  // Its hub tier (set from the request before it registers).
  int tier() const { return tier_; }

  void Start() override;
  void OnCancel() override;
  void OnDone() override;
  void Abort(const grpc::Status& status) override;

 private:
  // The request arrived (or not): admit, decode, register, send.
  void OnRead(bool ok);
  void OnWriteDone(bool ok);
  void OnMetadataSent(bool) {}
  void OnFinished(bool) {}
  // Finishes with `status` unless already finishing. Call without mu_ held.
  void FinishOnce(const grpc::Status& status);
  // Starts the finishing operation.
  void StartFinish(const grpc::Status& status);
  // Ends a watcher that does not read: cancels the call with
  // RESOURCE_EXHAUSTED (sent even to a zero window, ahead of the data), so
  // that its write in flight completes and its state is freed.
  void EndStalled();
  // Makes `snapshot` the write in flight: its delta if it follows the last
  // state sent and this watcher takes deltas, else the whole state.
  void StartWriteOf(std::shared_ptr<const WatchSnapshot> snapshot)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Hands write_buffer_ to gRPC (one core batch). Call without mu_ held.
  void Write();

  ServerCall* const call_;          // The call; owns this.
  WatchHub* const hub_;             // Publishes to this stream; borrowed.
  const CallDoor* const door_;      // Who may call; borrowed.
  const size_t max_request_bytes_;  // Limit of the inflated request.
  const uint64_t ordinal_;          // Its number; picks its wave.
  Metrics* const metrics_;        // Borrowed; never null (Metrics::OrDiscard).
  bool deltas_ = false;           // The watcher asked for changes only.
  int tier_ = 0;                  // The hub's tier of its interval.
  bool registered_ = false;       // Whether Add() succeeded.
  grpc::ByteBuffer request_;      // The request's bytes, until decoded.
  CallOp<WatchStream> read_;      // The request read.
  CallOp<WatchStream> metadata_;  // The headers sent.
  CallOp<WatchStream> written_;   // A state written.
  CallOp<WatchStream> finished_;  // The status sent.

  absl::Mutex mu_;  // Guards the fields below; never held into gRPC calls.
  // The state being written (owned); assigned only while no write is in
  // flight, and destroyed when it completes.
  grpc_byte_buffer* write_buffer_ = nullptr;
  // The state write_buffer_ is of, held (and so charged) until the write
  // completes; null when none is in flight.
  std::shared_ptr<const WatchSnapshot> in_flight_ ABSL_GUARDED_BY(mu_);
  absl::Time write_started_ ABSL_GUARDED_BY(mu_);  // Of the write in flight.
  StreamEnd end_ ABSL_GUARDED_BY(mu_);  // Write in flight, finishing.
  // The newest sequence accepted; nullopt before the first.
  std::optional<uint64_t> offered_ ABSL_GUARDED_BY(mu_);
  // The next state to send once the write in flight completes.
  std::shared_ptr<const WatchSnapshot> next_ ABSL_GUARDED_BY(mu_);
  // WatchSnapshot::publish of the last state written; 0: none a delta can
  // follow.
  uint64_t sent_publish_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_WATCH_WATCH_STREAM_H_
