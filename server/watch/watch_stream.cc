#include "server/watch/watch_stream.h"

#include <utility>


namespace metasrv::server {

WatchStream::WatchStream(WatchHub* hub, Metrics* metrics)
    : hub_(hub),
      ordinal_(hub->NextOrdinal()),
      metrics_(Metrics::OrDiscard(metrics)) {}

absl::Status WatchStream::OnRequest(PushCall* call) {
  call_ = call;
  // Set before a wave can see this watcher.
  deltas_ = request_.deltas();
  tier_ = hub_->TierFor(absl::Milliseconds(request_.min_interval_ms()));
  if (absl::Status added = hub_->Add(this); !added.ok()) return added;
  registered_ = true;
  // Registered first, so no push is missed; an older state offered after a
  // newer one is dropped. None: the publisher is about to send one.
  std::shared_ptr<const WatchSnapshot> current = hub_->Current(tier_);
  if (current != nullptr) Offer(std::move(current));
  return absl::OkStatus();
}

void WatchStream::Offer(std::shared_ptr<const WatchSnapshot> snapshot) {
  if (call_->Offer(std::move(snapshot))) metrics_->WatchSkipped();
}

const SharedMessage* WatchStream::Choose(const PushItem& item) {
  const auto& snapshot = static_cast<const WatchSnapshot&>(item);
  const bool follows =
      sent_publish_ != 0 && snapshot.publish == sent_publish_ + 1;
  sent_publish_ = snapshot.publish;
  return deltas_ && follows && snapshot.delta != nullptr
             ? snapshot.delta.get()
             : snapshot.message.get();
}

void WatchStream::OnClose() {
  if (registered_) hub_->Remove(this);
}

}  // namespace metasrv::server
