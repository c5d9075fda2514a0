// WatchStream: one WatchFlowState call's logic, the handler the WatchHub
// offers states to (see flow_state_watch.h for what is sent and when), over
// the runtime's PushCall shape (which owns the call protocol: the request
// decoded and admitted, one write in flight and the newest state waiting,
// the stall limit, the status once, the end at a step-down).
#ifndef METASRV_SERVER_WATCH_WATCH_STREAM_H_
#define METASRV_SERVER_WATCH_WATCH_STREAM_H_

#include <cstdint>
#include <memory>

#include "metasrv/v1/metasrv.pb.h"
#include "server/ops/metrics.h"
#include "server/rpc/push_call.h"
#include "server/watch/flow_state_watch.h"

namespace metasrv::server {

class WatchStream final : public PushCall::Handler, public Watcher {
 public:
  // Borrows both. Registers with `hub` once its request came and sends the
  // current state; with `deltas` asked, later messages are changes where
  // they can be.
  WatchStream(WatchHub* hub, Metrics* metrics);

  // Offers `snapshot` to the call (PushCall::Offer); a state it skips is
  // counted.
  void Offer(std::shared_ptr<const WatchSnapshot> snapshot) override;

  // Its call, once its request came.
  PushCall* call() const { return call_; }
  uint64_t ordinal() const override { return ordinal_; }
  // Its hub tier (set from the request before it registers).
  int tier() const override { return tier_; }

  google::protobuf::MessageLite* request() override { return &request_; }
  absl::Status OnRequest(PushCall* call) override;
  // The delta if it follows the last state sent and this watcher takes
  // deltas, else the whole state.
  const SharedMessage* Choose(const PushItem& item) override;
  void OnStalled() override { metrics_->WatchStalled(); }
  void OnClose() override;

 private:
  WatchHub* const hub_;             // Publishes to this stream; borrowed.
  const uint64_t ordinal_;          // Its number; picks its wave.
  metasrv::v1::WatchFlowStateRequest request_;  // Decoded by the shape.
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
