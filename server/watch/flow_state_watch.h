// WatchFlowState: the aggregate pushed to subscribers as it changes.
//
// One publisher thread builds each new state once, serializes it once, and
// offers the same bytes to every watcher. A change only marks the state
// dirty (heartbeats never wait for watchers); the publisher builds at most
// one state per min_interval. Each watcher has at most one write in flight
// and one state waiting: a newer state replaces the waiting one, so a slow
// reader skips to the latest and memory stays bounded whatever it does.
#ifndef METASRV_SERVER_WATCH_FLOW_STATE_WATCH_H_
#define METASRV_SERVER_WATCH_FLOW_STATE_WATCH_H_

#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/server_callback.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/flow_state_manager.h"
#include "server/ops/metrics.h"
#include "server/rpc/stream_end.h"
#include "server/rpc/stream_registry.h"

namespace metasrv::server {

// One state as sent: a serialized metasrv.v1.WatchFlowStateResponse.
struct WatchSnapshot {
  uint64_t sequence = 0;     // The hub's change count it reflects.
  grpc::ByteBuffer message;  // The bytes to write; shared by all watchers.
};

class WatchStream;

// Thread safety: all methods are safe from any thread.
class WatchHub final : public core::FlowStateListener {
 public:
  struct Options {
    absl::Duration min_interval = absl::Milliseconds(500);  // Between pushes.
    uint64_t max_watchers = 50000;  // Open watch streams; 0: no limit.
  };

  // Borrows both (null `metrics`: none kept); they must outlive the hub.
  // Call Start() to begin publishing.
  WatchHub(const core::FlowStateManager* flow_state, Options options,
           Metrics* metrics);
  ~WatchHub() override;
  WatchHub(const WatchHub&) = delete;
  WatchHub& operator=(const WatchHub&) = delete;

  void Start();
  // Stops publishing, refuses new watchers and ends the open ones with
  // `status`. Idempotent.
  void Stop(const grpc::Status& status);
  // Ends every open watcher with `status` (this replica stepped down).
  void AbortAll(const grpc::Status& status) { streams_.AbortAll(status); }

  // core::FlowStateListener: marks the state dirty. O(1), never blocks on
  // watchers.
  void OnFlowStateChanged() override;

  // Registers a watcher; kUnavailable after Stop(), kResourceExhausted at
  // the limit.
  absl::Status Add(WatchStream* stream);
  void Remove(WatchStream* stream);

  // The state now, for a new watcher: the last one built if nothing changed
  // since, else built now. An error only if the KV fails.
  absl::StatusOr<std::shared_ptr<const WatchSnapshot>> Current();

  uint64_t watchers() const { return streams_.size(); }

 private:
  // The publisher: waits for a change, waits out min_interval since the last
  // push, builds the state and offers it to every watcher.
  void Run();
  // Builds the state as of change count `sequence`.
  absl::StatusOr<std::shared_ptr<const WatchSnapshot>> Build(uint64_t sequence,
                                                             bool reset) const;

  const core::FlowStateManager* const flow_state_;  // The state; borrowed.
  const Options options_;                           // Interval and limit.
  Metrics* const metrics_;  // Borrowed; never null (Metrics::OrDiscard).
  StreamRegistry streams_;  // The open watchers (all WatchStreams).
  absl::Mutex mu_;          // Guards the fields below.
  uint64_t changes_ ABSL_GUARDED_BY(mu_) = 0;    // Changes seen so far.
  uint64_t published_ ABSL_GUARDED_BY(mu_) = 0;  // changes_ last published.
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;   // Stop() was called.
  // The newest state built (for new watchers); null before the first.
  std::shared_ptr<const WatchSnapshot> current_ ABSL_GUARDED_BY(mu_);
  // Flow-state term of the last push; used by the publisher thread only.
  uint64_t published_term_ = 0;
  std::thread publisher_;  // Runs Run(); joinable between Start() and Stop().
};

// The reactor of one WatchFlowState call.
class WatchStream final : public grpc::ServerWriteReactor<grpc::ByteBuffer>,
                          public AbortableStream {
 public:
  // Registers with `hub` and sends the current state. Deletes itself when
  // gRPC is done with it.
  explicit WatchStream(WatchHub* hub, Metrics* metrics);

  // Sends `snapshot` if no write is in flight, else keeps it as the next to
  // send (replacing, and so skipping, any older one waiting). States not
  // newer than one already offered are dropped. Never blocks.
  void Offer(std::shared_ptr<const WatchSnapshot> snapshot);

  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;
  void Abort(const grpc::Status& status) override;

 private:
  // Finishes with `status` unless already finishing. Call without mu_ held.
  void FinishOnce(const grpc::Status& status);

  WatchHub* const hub_;      // Publishes to this stream; borrowed.
  Metrics* const metrics_;   // Borrowed; never null (Metrics::OrDiscard).
  bool registered_ = false;  // Whether Add() succeeded.

  absl::Mutex mu_;  // Guards the fields below; never held into gRPC calls.
  // The state being written; assigned only while no write is in flight.
  grpc::ByteBuffer write_buffer_;
  StreamEnd end_ ABSL_GUARDED_BY(mu_);  // Write in flight, finishing.
  // The newest sequence accepted; nullopt before the first.
  std::optional<uint64_t> offered_ ABSL_GUARDED_BY(mu_);
  // The next state to send once the write in flight completes.
  std::shared_ptr<const WatchSnapshot> next_ ABSL_GUARDED_BY(mu_);
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_WATCH_FLOW_STATE_WATCH_H_
