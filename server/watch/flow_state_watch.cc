#include "server/watch/flow_state_watch.h"

#include <algorithm>
#include <utility>

#include "absl/numeric/bits.h"
#include "absl/time/clock.h"
#include "metasrv/v1/metasrv.pb.h"
#include "server/codec/flow_state_columns.h"
#include "server/ops/threads.h"

namespace metasrv::server {

WatchHub::WatchHub(const core::FlowStateManager* flow_state, Options options,
                   Metrics* metrics, CallDoor* door, const core::Clock* clock)
    : flow_state_(flow_state),
      options_(options),
      metrics_(Metrics::OrDiscard(metrics)),
      door_(door),
      clock_(clock) {}

WatchHub::~WatchHub() {
  Stop();
}

void WatchHub::Start() {
  publisher_ = StartThread(ThreadRole::kWatchPublisher, [this] { Run(); });
}

int WatchHub::TierFor(absl::Duration asked) const {
  int tier = 0;
  while (tier + 1 < kTiers && IntervalOf(tier) < asked) ++tier;
  return tier;
}

void WatchHub::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (publisher_.joinable()) publisher_.join();
}

uint64_t WatchHub::watchers() const {
  absl::MutexLock lock(&mu_);
  uint64_t watchers = 0;
  for (const TierState& tier : tiers_) watchers += tier.watchers;
  return watchers;
}

void WatchHub::OnFlowStateChanged() {
  absl::MutexLock lock(&mu_);
  ++changes_;
}

absl::Status WatchHub::Add(Watcher* stream) {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return absl::UnavailableError("the server is shutting down");
    ++tiers_[stream->tier()].watchers;
  }
  absl::MutexLock lock(&buckets_mu_);
  buckets_[stream->tier()][stream->ordinal() % kMaxWaves].push_back(stream);
  return absl::OkStatus();
}

void WatchHub::Remove(Watcher* stream) {
  {
    absl::MutexLock lock(&buckets_mu_);
    Bucket& bucket = buckets_[stream->tier()][stream->ordinal() % kMaxWaves];
    auto it = std::find(bucket.begin(), bucket.end(), stream);
    if (it != bucket.end()) {
      *it = bucket.back();
      bucket.pop_back();
    }
  }
  absl::MutexLock lock(&mu_);
  --tiers_[stream->tier()].watchers;
}

namespace {

// The optional fields of a WatchFlowStateResponse beside `state`.
struct MessageFields {
  uint64_t sequence = 0;                           // Field 1.
  bool reset = false;                              // Field 2.
  bool delta = false;                              // Field 5.
  uint64_t base = 0;                               // Field 6.
  const std::vector<uint32_t>* removed = nullptr;  // Field 7 (packed).
};

// A serialized WatchFlowStateResponse: `fields`, then `state` (field 4) as
// its chunks, referenced and not copied.
SharedPieces Message(const MessageFields& fields, const EncodedFlowState& state,
                     absl::Time now) {
  std::string prefix;
  auto varint_field = [&prefix](uint32_t field, uint64_t value) {
    AppendVarint(field << 3 | 0, &prefix);
    AppendVarint(value, &prefix);
  };
  if (fields.sequence != 0) varint_field(1, fields.sequence);
  if (fields.reset) varint_field(2, 1);
  varint_field(3, static_cast<uint64_t>(absl::ToUnixMillis(now)));
  if (fields.delta) varint_field(5, 1);
  if (fields.base != 0) varint_field(6, fields.base);
  if (fields.removed != nullptr && !fields.removed->empty()) {
    std::string packed;
    for (uint32_t id : *fields.removed) AppendVarint(id, &packed);
    AppendVarint(7 << 3 | 2, &prefix);
    AppendVarint(packed.size(), &prefix);
    prefix += packed;
  }
  AppendVarint(4 << 3 | 2, &prefix);
  AppendVarint(state.size(), &prefix);
  return ToPieces(state, std::move(prefix));
}

}  // namespace

std::shared_ptr<const WatchSnapshot> WatchHub::Publish(int tier,
                                                       uint64_t sequence,
                                                       bool force) {
  TierPublisher& pub = publishing_[tier];
  if (pub.tracker == nullptr) {
    pub.tracker = std::make_unique<core::FlowChangeTracker>(
        kColumnsSlot, &EncodeColumnsChunk, flow_state_->term());
  }
  core::FlowChangeTracker::Update update = pub.tracker->Advance(*flow_state_);
  const bool same = !force && !update.reset && update.changed.empty() &&
                    update.removed.empty() && update.found == pub.last_found &&
                    pub.last_sequence.has_value();
  if (same) return nullptr;  // Reports that repeated what was known.
  pub.last_found = update.found;
  auto snapshot = std::make_shared<WatchSnapshot>();
  snapshot->sequence = sequence;
  snapshot->term = update.term;
  snapshot->publish = ++pub.publishes;
  EncodedFlowState whole;
  whole.found = update.found;
  whole.chunks = std::move(update.chunks);
  MessageFields fields;
  fields.sequence = sequence;
  fields.reset = update.reset;
  snapshot->message =
      std::make_unique<SharedMessage>(Message(fields, whole, clock_->Now()));
  const std::optional<uint64_t> base =
      std::exchange(pub.last_sequence, sequence);
  if (!update.reset && base.has_value()) {
    EncodedFlowState changed;
    changed.found = update.found;
    if (!update.changed.empty()) {
      changed.chunks.push_back(std::make_shared<const std::string>(
          EncodeColumnsChunk(update.changed)));
    }
    fields.delta = true;
    fields.base = *base;
    fields.removed = &update.removed;
    snapshot->delta = std::make_unique<SharedMessage>(
        Message(fields, changed, clock_->Now()));
  }
  return snapshot;
}

std::shared_ptr<const WatchSnapshot> WatchHub::Current(int tier) {
  const uint64_t term = flow_state_->term();  // Before mu_: see the lock order.
  absl::MutexLock lock(&mu_);
  TierState& t = tiers_[tier];
  // The last state published to the tier, if of this term: changes since
  // are about to be published (a watcher is registered now), and this
  // watcher gets them next, as a delta.
  if (t.current != nullptr && t.current->term == term) return t.current;
  // None yet: the publisher publishes one now, and offers it to this
  // watcher with the others, so that deltas can follow it.
  t.refresh = true;
  return nullptr;
}

absl::Time WatchHub::LookedAt() const {
  absl::MutexLock lock(&mu_);
  return looked_at_;
}

uint64_t WatchHub::PublishedTo(int tier) const {
  absl::MutexLock lock(&mu_);
  return tiers_[tier].published;
}

int WatchHub::TiersHeld() const {
  absl::MutexLock lock(&mu_);
  int held = 0;
  for (const TierState& t : tiers_) held += t.built ? 1 : 0;
  return held;
}

bool WatchHub::Wanted() const {
  if (stopping_) return true;
  for (int tier = 0; tier < kTiers; ++tier) {
    const TierState& t = tiers_[tier];
    if (Pending(tier) || (t.watchers == 0 && t.built)) return true;
  }
  return false;
}

bool WatchHub::AwaitDue(uint64_t* sequence,
                        std::vector<std::pair<int, bool>>* due) {
  while (true) {
    bool offering = false;  // Waves are still to go: wait for them too.
    for (const TierPublisher& pub : publishing_) {
      offering |= pub.offering != nullptr;
    }
    // Nobody watching: nothing is built; the changes wait for a watcher.
    if (!offering) mu_.Await(absl::Condition(this, &WatchHub::Wanted));
    if (stopping_) return false;
    // A tier nobody watches lets go of its copy and its states.
    for (int tier = 0; tier < kTiers; ++tier) {
      TierState& t = tiers_[tier];
      if (t.watchers > 0 || !t.built) continue;
      t.built = false;
      t.refresh = false;
      t.current.reset();
      TierPublisher& pub = publishing_[tier];
      pub.tracker.reset();
      pub.last_sequence.reset();
      pub.last_found = false;
      pub.last_push = absl::InfinitePast();
      pub.offering.reset();
    }
    // Coalesce: no push to a tier sooner than its interval after the
    // previous one, as the clock tells (a test's manual clock too: hence
    // the slices). Waves are paced in real time: they spread load.
    const absl::Time now = clock_->Monotonic();
    looked_at_ = now;
    absl::Duration left = absl::InfiniteDuration();
    for (int tier = 0; tier < kTiers; ++tier) {
      const TierPublisher& pub = publishing_[tier];
      if (Pending(tier)) {
        left = std::min(left, pub.last_push + IntervalOf(tier) - now);
      }
      if (pub.offering != nullptr) {
        left = std::min(left, pub.next_wave_at - absl::Now());
      }
    }
    if (left == absl::InfiniteDuration()) continue;  // Only tiers to free.
    if (left > absl::ZeroDuration()) {
      mu_.AwaitWithTimeout(absl::Condition(&stopping_),
                           std::min(left, absl::Milliseconds(50)));
      continue;
    }
    *sequence = changes_;
    for (int tier = 0; tier < kTiers; ++tier) {
      TierState& t = tiers_[tier];
      if (!Pending(tier) ||
          publishing_[tier].last_push + IntervalOf(tier) > now) {
        continue;
      }
      t.published = *sequence;
      t.built = true;
      due->emplace_back(tier, std::exchange(t.refresh, false));
    }
    return true;
  }
}

void WatchHub::MakeCurrent(int tier,
                           std::shared_ptr<const WatchSnapshot> snapshot) {
  std::shared_ptr<const WatchSnapshot> superseded;
  {
    absl::MutexLock lock(&mu_);
    std::shared_ptr<const WatchSnapshot>& current = tiers_[tier].current;
    if (current == nullptr || current->sequence <= snapshot->sequence) {
      superseded = std::exchange(current, std::move(snapshot));
    }
  }
  // Held from now on only by watchers still writing it: charged until the
  // last lets go (at once, if none holds it).
  if (superseded != nullptr) {
    superseded->charge = door_->HoldShared(
        superseded->message->Length() +
        (superseded->delta != nullptr ? superseded->delta->Length() : 0));
  }
}

void WatchHub::Run() {
  while (true) {
    uint64_t sequence = 0;
    std::vector<std::pair<int, bool>> due;  // Tier, and whether forced.
    {
      absl::MutexLock lock(&mu_);
      if (!AwaitDue(&sequence, &due)) return;
    }
    for (int tier = 0; tier < kTiers; ++tier) {
      const TierPublisher& pub = publishing_[tier];
      while (pub.offering != nullptr && pub.next_wave_at <= absl::Now()) {
        OfferWave(tier);
      }
    }
    for (const auto& [tier, force] : due) {
      std::shared_ptr<const WatchSnapshot> snapshot =
          Publish(tier, sequence, force);
      if (snapshot == nullptr) continue;  // Nothing to tell.
      publishing_[tier].last_push = clock_->Monotonic();
      MakeCurrent(tier, snapshot);
      StartOffering(tier, std::move(snapshot));
      metrics_->WatchPublished();
    }
  }
}

void WatchHub::StartOffering(int tier,
                             std::shared_ptr<const WatchSnapshot> snapshot) {
  TierPublisher& pub = publishing_[tier];
  // The previous state's last waves go first, at once (they are late only
  // if the tier's watchers keep the transport's loops too busy).
  while (pub.offering != nullptr) OfferWave(tier);
  uint64_t watchers = 0;
  {
    absl::MutexLock lock(&mu_);
    watchers = tiers_[tier].watchers;
  }
  // Many watchers: waves of about kWaveSize, spread over half of the
  // server's interval (whatever the tier's: a longer spread delays the
  // messages and did not lower heartbeat p99; bench/RESULTS.md), so that
  // the writes (which share the transport's loops with heartbeats) never
  // come in one burst. A power of two, so that wave w is
  // the buckets w, w + waves, ...; rounded up, so that a wave is at most
  // about kWaveSize watchers.
  pub.waves = std::min(
      absl::bit_ceil(std::max<uint64_t>(watchers / kWaveSize, 1)), kMaxWaves);
  pub.gap = options_.min_interval / 2 / static_cast<int64_t>(pub.waves);
  pub.wave = 0;
  pub.next_wave_at = absl::Now();
  pub.offering = std::move(snapshot);
  OfferWave(tier);
}

void WatchHub::OfferWave(int tier) {
  TierPublisher& pub = publishing_[tier];
  {
    // Each offer is posted to its watcher's loop (PushCall::Offer never
    // blocks); a watcher gone before its wave is in no bucket any more.
    absl::MutexLock lock(&buckets_mu_);
    for (uint64_t b = pub.wave; b < kMaxWaves; b += pub.waves) {
      for (Watcher* watcher : buckets_[tier][b]) {
        watcher->Offer(pub.offering);
      }
    }
  }
  pub.next_wave_at += pub.gap;
  if (++pub.wave == pub.waves) pub.offering.reset();
}

}  // namespace metasrv::server
