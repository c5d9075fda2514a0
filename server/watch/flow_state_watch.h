// WatchFlowState: the aggregate pushed to subscribers as it changes. This
// is the hub that builds and offers the states; each call is a WatchStream
// (watch_stream.h), which the hub knows only as a Watcher (below): the
// stream includes the hub, never the reverse.
//
// One publisher thread builds each new state once per tier (see Intervals
// below), serializes it once, and offers the same bytes to every watcher of
// that tier. A change only marks the state dirty (heartbeats never wait for
// watchers); the publisher builds at most one state per tier interval, and
// none while nobody watches. Each watcher has
// at most one write in flight and one state waiting: a newer state replaces the
// waiting one, so a slow reader skips to the latest.
//
// A watcher that does not read at all (a zero HTTP/2 window) still holds the
// state of its write in flight. Each state but the newest is charged once to
// --max_reply_bytes_in_flight (through the door) for as long as a watcher
// holds it; while more is held than that, new watchers are refused and the
// door's stall policy ends a watcher whose write has been in flight for
// over --reply_stall_limit (PushCall), which frees its state.
//
// Deltas: the publisher keeps its own copy of the aggregate
// (core::FlowChangeTracker) and makes each state from it twice, whole and as
// the change since its previous state. A watcher that asked for deltas gets
// the change when the previous state was the last one it was sent, and the
// whole state otherwise (its first message, after a reset, after it skipped a
// state). Either message is built once and shared by every watcher.
//
// Intervals: a watcher may ask for fewer messages. Watchers are served in
// tiers, tier t every min_interval * 2^t (t < kTiers), each with its own
// publishes and its own tracker, so that a delta holds every flow changed
// over its tier's interval once. A tier nobody watches holds nothing.
#ifndef METASRV_SERVER_WATCH_FLOW_STATE_WATCH_H_
#define METASRV_SERVER_WATCH_FLOW_STATE_WATCH_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/clock.h"
#include "core/flow_change_tracker.h"
#include "core/flow_state_manager.h"
#include "server/ops/metrics.h"
#include "server/rpc/call_door.h"
#include "server/rpc/push_call.h"

namespace metasrv::server {

// One state as sent: serialized metasrv.v1.WatchFlowStateResponses.
// Its sequence (PushItem) is the hub's change count it reflects.
struct WatchSnapshot final : PushItem {
  uint64_t term = 0;  // The flow-state term it is of.
  // The publisher's count of states (1, 2, ...); 0 for a state built for a
  // new watcher, which no delta follows.
  uint64_t publish = 0;
  // The whole state; shared by all watchers. Never null once published.
  std::unique_ptr<const SharedMessage> message;
  // The change since publish `publish - 1`, for delta watchers that were
  // sent that one; null after a reset or when there is no such publish.
  std::unique_ptr<const SharedMessage> delta;
  // Both messages' bytes, held against the reply budget from when a newer
  // state replaces this one (as the hub's current) for as long as a watcher
  // still holds it. Set by the publisher only, while it holds this state.
  mutable ReplyCharge charge;
};

// What the hub offers states to: a watcher (WatchStream, one per call),
// known to the hub only through this, so that the hub's code never
// includes the stream's.
class Watcher {
 public:
  virtual ~Watcher() = default;
  // Offers `snapshot` (the newest state of its tier); never blocks.
  virtual void Offer(std::shared_ptr<const WatchSnapshot> snapshot) = 0;
  // Its tier (WatchHub::TierFor of what it asked), fixed before Add().
  virtual int tier() const = 0;
  // Its number (WatchHub::NextOrdinal): picks its wave.
  virtual uint64_t ordinal() const = 0;
};

// Thread safety: all methods are safe from any thread.
class WatchHub final : public core::FlowStateListener {
 public:
  struct Options {
    absl::Duration min_interval = absl::Milliseconds(500);  // Between pushes.
  };

  // Borrows all four (null `metrics`: none kept; `door`, where states are
  // charged, not null); they must outlive the hub. The interval is timed on
  // `clock`'s monotonic time. Call Start() to begin publishing.
  WatchHub(const core::FlowStateManager* flow_state, Options options,
           Metrics* metrics, CallDoor* door,
           const core::Clock* clock = core::SystemClock());
  ~WatchHub() override;
  WatchHub(const WatchHub&) = delete;
  WatchHub& operator=(const WatchHub&) = delete;

  void Start();
  // Stops publishing and refuses new watchers. Idempotent. The door's
  // ledger ends the open ones (CallKind::kWatch).
  void Stop();

  // core::FlowStateListener: marks the state dirty. O(1), never blocks on
  // watchers.
  void OnFlowStateChanged() override;

  // Watchers are served at min_interval * 2^tier, tier < kTiers.
  static constexpr int kTiers = 8;
  // The tier of a watcher that asked for at most one message per `asked`:
  // the first whose interval is not shorter, else the last.
  int TierFor(absl::Duration asked) const;

  // Registers a watcher (in its tier()); kUnavailable after Stop(). (The
  // door bounds how many are open: --max_streams.)
  absl::Status Add(Watcher* stream);
  void Remove(Watcher* stream);

  // The state for a new watcher of `tier` (registered first): the last one
  // published to the tier if it is of this term (changes since are about to
  // be published); else null, and the publisher publishes one at once,
  // offered to it.
  std::shared_ptr<const WatchSnapshot> Current(int tier);

  // Watchers registered now.
  uint64_t watchers() const ABSL_LOCKS_EXCLUDED(mu_);
  // Tiers that hold a copy of the aggregate or a state (for tests).
  int TiersHeld() const ABSL_LOCKS_EXCLUDED(mu_);
  // For tests that check on the clock that nothing was due: the monotonic
  // time the publisher last weighed its tiers' intervals against, and the
  // count of changes last published to `tier` (it moves when the tier is
  // published to). Both read under one lock with the publisher's decision.
  absl::Time LookedAt() const ABSL_LOCKS_EXCLUDED(mu_);
  uint64_t PublishedTo(int tier) const ABSL_LOCKS_EXCLUDED(mu_);
  // A number for each new watcher (0, 1, ...), to split them in waves.
  uint64_t NextOrdinal() { return ordinals_.fetch_add(1); }

 private:
  // What a tier shares with watchers' threads (under mu_).
  struct TierState {
    uint64_t watchers = 0;   // Registered watchers.
    bool refresh = false;    // A new watcher found no state: publish now.
    uint64_t published = 0;  // changes_ last published to it.
    // The newest state built for it (for new watchers); null before the
    // first and while nobody watches.
    std::shared_ptr<const WatchSnapshot> current;
    bool built = false;  // It holds a tracker or a state (the publisher's).
  };
  // A tier's publishing; the publisher thread's only.
  struct TierPublisher {
    // Its copy of the aggregate; null while nobody watches.
    std::unique_ptr<core::FlowChangeTracker> tracker;
    uint64_t publishes = 0;  // States published (never reset).
    // Sequence of its last state published (nullopt: none to follow).
    std::optional<uint64_t> last_sequence;
    bool last_found = false;                      // Its `found`.
    absl::Time last_push = absl::InfinitePast();  // Monotonic.
    // The state being offered wave by wave; null once every wave went.
    std::shared_ptr<const WatchSnapshot> offering;
    uint64_t wave = 0;        // Its next wave.
    uint64_t waves = 0;       // Its number of waves.
    absl::Duration gap;       // Between two of its waves.
    absl::Time next_wave_at;  // When its next wave is due (real time).
  };
  absl::Duration IntervalOf(int tier) const {
    return options_.min_interval * (int64_t{1} << tier);
  }
  // Whether `tier` has watchers and news for them.
  bool Pending(int tier) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const TierState& t = tiers_[tier];
    return t.watchers > 0 && (changes_ != t.published || t.refresh);
  }
  // Whether the publisher has anything to do (a pending tier, an empty tier
  // to free, Stop()).
  bool Wanted() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Waits until a pending tier or a wave is due (or Stop(): false), frees
  // the tiers nobody watches, and marks the due tiers published as of
  // `sequence`; returns them with whether each was forced (a new watcher
  // waits).
  bool AwaitDue(uint64_t* sequence, std::vector<std::pair<int, bool>>* due)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The publisher: waits for a change, waits out each tier's interval since
  // its last push, builds its state and offers it to its watchers.
  void Run();
  // Watchers are offered a state in waves of about kWaveSize, at most
  // kMaxWaves of them (a power of two: a wave is a set of buckets).
  static constexpr uint64_t kWaveSize = 32;
  static constexpr uint64_t kMaxWaves = 32;
  // The watchers of one bucket (those whose ordinal % kMaxWaves is its
  // index); a wave visits only its own buckets, not every watcher.
  using Bucket = std::vector<Watcher*>;
  // Starts offering `snapshot` to `tier`'s watchers in waves spread over
  // half of min_interval, after the rest of the tier's previous state.
  void StartOffering(int tier, std::shared_ptr<const WatchSnapshot> snapshot);
  // Offers the next wave of `tier`'s state to its watchers.
  void OfferWave(int tier);
  // Builds `tier`'s next state, as of change count `sequence`, from its
  // tracker's copy; null when it is the same as the last one published to
  // it, unless `force`.
  std::shared_ptr<const WatchSnapshot> Publish(int tier, uint64_t sequence,
                                               bool force);
  // Makes `snapshot` the tier's current state; the one it replaces is
  // charged to the reply budget for as long as watchers hold it.
  void MakeCurrent(int tier, std::shared_ptr<const WatchSnapshot> snapshot);

  const core::FlowStateManager* const flow_state_;  // The state; borrowed.
  const Options options_;                           // Interval and bound.
  Metrics* const metrics_;  // Borrowed; never null (Metrics::OrDiscard).
  CallDoor* const door_;    // Where states are charged; borrowed.
  const core::Clock* const clock_;     // Times pushes; borrowed.
  std::atomic<uint64_t> ordinals_{0};  // Next NextOrdinal().
  // Guards buckets_; taken before a watcher's own lock (a wave offers
  // under it), never while holding one.
  absl::Mutex buckets_mu_;
  // The registered watchers, by tier and bucket.
  std::array<std::array<Bucket, kMaxWaves>, kTiers> buckets_
      ABSL_GUARDED_BY(buckets_mu_);
  mutable absl::Mutex mu_;                     // Guards the fields below.
  uint64_t changes_ ABSL_GUARDED_BY(mu_) = 0;  // Changes seen so far.
  // When (monotonic) the publisher last weighed the tiers (LookedAt()).
  absl::Time looked_at_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  std::array<TierState, kTiers> tiers_ ABSL_GUARDED_BY(mu_);  // By tier.
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;       // Stop() was called.
  std::array<TierPublisher, kTiers> publishing_;     // The publisher's only.
  std::thread publisher_;  // Runs Run(); joinable between Start() and Stop().
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_WATCH_FLOW_STATE_WATCH_H_
