// WatchStream: one WatchFlowState call's logic, the handler the WatchHub
// offers states to (see flow_state_watch.h for what is sent and when), over
// the runtime's PushCall shape (which owns the call protocol: one write in
// flight and the newest state waiting, the door's stall policy, the status
// once, the end at a step-down).
#ifndef METASRV_SERVER_WATCH_WATCH_STREAM_H_
#define METASRV_SERVER_WATCH_WATCH_STREAM_H_

#include <cstddef>
#include <cstdint>
#include <memory>

#include "server/ops/metrics.h"
#include "server/rpc/call_door.h"
#include "server/rpc/push_call.h"
#include "server/watch/flow_state_watch.h"

namespace metasrv::server {

class WatchStream final : public PushCall::Handler, public Watcher {
 public:
  // Borrows all. Admits the call through `door` (null: admitted), decodes
  // its request (at most `max_request_bytes` inflated), registers with
  // `hub` and sends the current state; with `deltas` asked, later messages
  // are changes where they can be. Refused with RESOURCE_EXHAUSTED while
  // answers exceed the reply budget.
  WatchStream(WatchHub* hub, const CallDoor* door, size_t max_request_bytes,
              Metrics* metrics);

  // Offers `snapshot` to the call (PushCall::Offer); a state it skips is
  // counted.
  void Offer(std::shared_ptr<const WatchSnapshot> snapshot) override;

  // Its call, once its request came.
  PushCall* call() const { return call_; }
  uint64_t ordinal() const override { return ordinal_; }
  // Its hub tier (set from the request before it registers).
  int tier() const override { return tier_; }

  absl::Status OnRequest(const RawRequest& request, PushCall* call) override;
  // The delta if it follows the last state sent and this watcher takes
  // deltas, else the whole state.
  const SharedMessage* Choose(const PushItem& item) override;
  void OnStalled() override { metrics_->WatchStalled(); }
  void OnClose() override;

 private:
  WatchHub* const hub_;             // Publishes to this stream; borrowed.
  const CallDoor* const door_;      // Who may call; borrowed.
  const size_t max_request_bytes_;  // Limit of the inflated request.
  const uint64_t ordinal_;          // Its number; picks its wave.
  Metrics* const metrics_;    // Borrowed; never null (Metrics::OrDiscard).
  PushCall* call_ = nullptr;  // Set by OnRequest().
  bool deltas_ = false;       // The watcher asked for changes only.
  int tier_ = 0;              // The hub's tier of its interval.
  bool registered_ = false;   // Whether Add() succeeded.
  // WatchSnapshot::publish of the last state chosen; 0: none a delta can
  // follow. Only Choose() touches it, under the call's lock.
  uint64_t sent_publish_ = 0;
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_WATCH_WATCH_STREAM_H_
