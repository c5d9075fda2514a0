// Every open call, counted once, by host and by kind: the one owner of what
// calls hold. A call is charged here when it is accepted, at its first
// HEADERS frame, before any of its work; its ticket gives it back when the
// call is deleted. The ledger applies every bound on open calls (in all, per
// kind: --max_calls, --max_streams) with max-min fairness: while one host
// wants room, no host holds more than its fair share (the bound over the
// hosts holding calls), and the host holding the most gives back its
// longest-idle call first. It also ends the streams of a kind (a step-down,
// shutdown) and heartbeat streams silent past a limit, and bounds each
// host's share of the reply budget.
//
// gRPC-free: a call that can be ended is an AbortableCall.
#ifndef METASRV_SERVER_RPC_CALL_LEDGER_H_
#define METASRV_SERVER_RPC_CALL_LEDGER_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/clock.h"

namespace metasrv::server {

// What a call is, for the bounds by kind and for ending calls of a kind.
enum class CallKind { kUnary, kHeartbeat, kWatch, kHealthWatch, kReflection };
inline constexpr int kCallKinds = 5;
// "unary", "heartbeat stream", ...: for errors and logs.
const char* CallKindName(CallKind kind);

// A call that can be told to end.
class AbortableCall {
 public:
  virtual ~AbortableCall() = default;
  // Ends the call with `status` as soon as no write is in flight. Called
  // under the ledger's lock: must not block nor call back into the ledger.
  virtual void Abort(const absl::Status& status) = 0;
};

// The bounds, from the settings (server_options.h); 0: none.
struct PeerLimits {
  uint64_t max_calls = 0;           // Calls open at once, in all.
  uint64_t max_calls_per_peer = 0;  // A fixed cap per host, beside fairness.
  uint64_t max_reply_bytes_per_peer = 0;  // A host's unread answers' bytes.
  // Calls of each kind open at once (by CallKind): --max_streams for
  // heartbeat streams and watchers.
  std::array<uint64_t, kCallKinds> max_open{};
  // IPv4 peers are one host per prefix of this many bits (PeerOf).
  int ipv4_prefix_bits = 32;
};

// What Enter() did besides, for the door's counters and logs.
struct EnterNote {
  // Why it refused the call, when it did.
  enum class Refusal { kCalls, kPeerCalls, kKind } why = Refusal::kCalls;
  // Refused though its host held less than its fair share: the bound is
  // held by calls no host gives back (live heartbeat streams).
  bool under_share = false;
  bool made_room = false;  // It ended another host's call for this one:
  std::string cut_host;    // that host,
  std::string cut_reason;  // and the status its call was ended with.
};

// Thread-safe. Enter(), a ticket's end and the ending of calls take the
// ledger's lock briefly; the reply share and Touch() are lock-free.
class CallLedger {
 public:
  class Ticket;

  // Borrows `clock` (times idleness), which must outlive the ledger.
  CallLedger(PeerLimits limits, const core::Clock* clock);
  CallLedger(const CallLedger&) = delete;
  CallLedger& operator=(const CallLedger&) = delete;

  // Charges a new call of `kind` from `host` (PeerAddress::host, the key
  // the transport computed at accept: PeerOf). At a
  // bound, a host under its fair share still gets in: the host holding the
  // most, over its share, gives back its longest-idle call (ended with
  // RESOURCE_EXHAUSTED; counted in evicted()). Otherwise kResourceExhausted
  // saying which bound; nothing is charged then. `note`, when given, says
  // which, and whether a call was ended.
  absl::StatusOr<Ticket> Enter(absl::string_view host, CallKind kind,
                               EnterNote* note = nullptr)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Ends every call of `kind` that can be ended with `status`.
  void AbortAll(CallKind kind, const absl::Status& status)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The same, and calls of `kind` attached from now on are refused.
  void Close(CallKind kind, const absl::Status& status)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The reply budget of `limit` bytes is full and `asker` wants room for an
  // answer: whether it is under its fair share of the budget (the limit over
  // the hosts with answers in flight, itself counted) and room is being
  // made by ending the longest-idle call with an answer in flight of the
  // host holding the most answers' bytes, over its share (set in `*note`).
  bool MakeReplyRoom(const Ticket& asker, uint64_t limit, EnterNote* note)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Ends the calls of `kind` not touched for longer than their own silence
  // limit (Ticket::SetSilenceLimit), or `limit` for a call that has none,
  // each with `status(its limit)` (called under the lock); returns how
  // many.
  int AbortSilent(CallKind kind, absl::Duration limit,
                  absl::FunctionRef<absl::Status(absl::Duration)> status)
      ABSL_LOCKS_EXCLUDED(mu_);

  int64_t open_calls() const ABSL_LOCKS_EXCLUDED(mu_);
  // Whether calls open reach half of --max_calls: from then on every
  // answer's call is attached while its bytes wait (CallDoor::Watches), so
  // that a call whose answer cannot be written can be ended for another
  // host. Lock-free.
  bool Crowded() const {
    return limits_.max_calls != 0 &&
           static_cast<uint64_t>(open_now_.load(std::memory_order_relaxed)) >=
               limits_.max_calls / 2;
  }
  uint64_t open(CallKind kind) const ABSL_LOCKS_EXCLUDED(mu_);
  size_t peers() const ABSL_LOCKS_EXCLUDED(mu_);  // Hosts with a call open.
  // Calls ended to make room for another host, since the start.
  uint64_t evicted() const { return evicted_.load(); }
  const PeerLimits& limits() const { return limits_; }

 private:
  struct Host;
  struct Call {
    Host* host;
    CallKind kind;
    AbortableCall* abort = nullptr;  // Attached; guarded by mu_.
    bool told = false;               // Told to end; guarded by mu_.
    bool evicted = false;            // For another host; guarded by mu_.
    std::atomic<int64_t> active;     // Last touched, in ns of the clock.
    // Silent past this many ns, it is ended (0: AbortSilent's default).
    std::atomic<int64_t> silence_ns{0};
    // Touched within this many ns it is live: never ended to make room
    // for another host (0: never live, as a call told no interval).
    std::atomic<int64_t> live_ns{0};
    std::atomic<uint64_t> reply_bytes{0};  // Its answers in flight.
  };
  struct Host {
    std::string key;                            // Its key in hosts_.
    int64_t calls = 0;                          // Open; guarded by mu_.
    std::array<int64_t, kCallKinds> by_kind{};  // Open; guarded by mu_.
    // Its calls, owned; guarded by mu_.
    absl::flat_hash_map<Call*, std::unique_ptr<Call>> open;
    std::atomic<uint64_t> reply_bytes{0};  // Its answers in flight.
  };

  // At a bound of `limit` calls of kind `kind` (-1: of any kind): whether
  // `asker` (null: a host with none open) is under its fair share and room
  // was made for it by ending the longest-idle call of the host holding
  // the most. `*share` is set to the fair share.
  bool MakeRoom(const Host* asker, int kind, uint64_t limit, int64_t* share,
                EnterNote* note) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The longest-idle call of `host` that can be ended to make room: of
  // `kind` (-1: any), with an answer in flight if `replying`, attached, not
  // told yet, and not live (Ticket::SetTold) at `now`; null when none.
  static Call* IdlestOf(const Host& host, int kind, bool replying, int64_t now);
  // Of `over` (hosts past their share, with what each holds, the most
  // first: FairShare::Over), walks until a host has a call IdlestOf()
  // finds, and ends that call with `reason(what its host holds)`, noted in
  // `*note`. False when no host has one (only calls in progress, or live).
  bool EvictFor(const std::vector<std::pair<int64_t, const Host*>>& over,
                int kind, bool replying, EnterNote* note,
                absl::FunctionRef<std::string(int64_t held)> reason)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Ends `call` with `status`, at most once.
  static void Tell(Call* call, const absl::Status& status);
  void Leave(Call* call) ABSL_LOCKS_EXCLUDED(mu_);
  int64_t NowNs() const { return absl::ToUnixNanos(clock_->Monotonic()); }

  const PeerLimits limits_;
  const core::Clock* const clock_;  // Borrowed.
  std::atomic<uint64_t> evicted_{0};
  mutable absl::Mutex mu_;  // Guards what is marked so, and Call::abort.
  // By host; an entry lives while the host has a call open.
  absl::flat_hash_map<std::string, std::unique_ptr<Host>> hosts_
      ABSL_GUARDED_BY(mu_);
  int64_t calls_ ABSL_GUARDED_BY(mu_) = 0;  // Open, in all.
  std::atomic<int64_t> open_now_{0};        // calls_, for Crowded().
  std::array<int64_t, kCallKinds> by_kind_ ABSL_GUARDED_BY(mu_){};
  // Hosts holding calls of each kind.
  std::array<int64_t, kCallKinds> hosts_by_kind_ ABSL_GUARDED_BY(mu_){};
  std::array<absl::flat_hash_set<Call*>, kCallKinds> attached_
      ABSL_GUARDED_BY(mu_);
  std::array<bool, kCallKinds> closed_ ABSL_GUARDED_BY(mu_){};
  // Evicted and not yet gone: each let one call in over a bound.
  int64_t evicting_ ABSL_GUARDED_BY(mu_) = 0;
};

// One call's place in the ledger. Move-only; Attach() and Detach() come
// from the call's own handler, the rest from any thread.
class CallLedger::Ticket {
 public:
  Ticket(Ticket&& other) noexcept
      : ledger_(std::exchange(other.ledger_, nullptr)),
        call_(std::exchange(other.call_, nullptr)) {}
  Ticket& operator=(Ticket&&) = delete;
  ~Ticket() {
    if (ledger_ != nullptr) ledger_->Leave(call_);
  }

  // The call can be ended through `call` (which must stay alive until
  // Detach()), replacing any attached before: by a step-down, shutdown, its
  // silence, or to make room for another host. kUnavailable once its kind
  // is closed.
  absl::Status Attach(AbortableCall* call);
  // The call can no longer be ended through `call` (nothing if another was
  // attached since).
  void Detach(AbortableCall* call);
  // The call did something (a request came): it is not idle.
  void Touch() {
    call_->active.store(ledger_->NowNs(), std::memory_order_relaxed);
  }
  CallKind kind() const { return call_->kind; }
  // Its host, as an identity other shares key on (the same for every call
  // of the host while one is open).
  const void* host() const { return call_->host; }
  // Its host's key (PeerAddress::host).
  const std::string& host_key() const;
  // Its client was told to send every `interval`: from now on the call is
  // live while touched within two intervals (never ended to make room for
  // another host: a heartbeat stream at its cadence), and silent once
  // untouched for `limit`, whatever AbortSilent's default.
  void SetTold(absl::Duration interval, absl::Duration limit) {
    call_->live_ns.store(absl::ToInt64Nanoseconds(2 * interval),
                         std::memory_order_relaxed);
    call_->silence_ns.store(absl::ToInt64Nanoseconds(limit),
                            std::memory_order_relaxed);
  }

  // Takes `bytes` of the host's reply share if they fit; false (nothing
  // taken) if they do not.
  bool TakeReply(uint64_t bytes) {
    const uint64_t limit = ledger_->limits_.max_reply_bytes_per_peer;
    std::atomic<uint64_t>& held = call_->host->reply_bytes;
    uint64_t now = held.load(std::memory_order_relaxed);
    do {
      if (limit != 0 && now + bytes > limit) return false;
    } while (!held.compare_exchange_weak(now, now + bytes,
                                         std::memory_order_relaxed));
    call_->reply_bytes.fetch_add(bytes, std::memory_order_relaxed);
    return true;
  }
  // Takes `bytes` of the host's share whether or not they fit (an answer
  // that is always sent, counted so that the share tells the truth).
  void ChargeReply(uint64_t bytes) {
    call_->host->reply_bytes.fetch_add(bytes, std::memory_order_relaxed);
    call_->reply_bytes.fetch_add(bytes, std::memory_order_relaxed);
  }
  // Gives back what TakeReply() or ChargeReply() took.
  void GiveReply(uint64_t bytes) {
    call_->host->reply_bytes.fetch_sub(bytes, std::memory_order_relaxed);
    call_->reply_bytes.fetch_sub(bytes, std::memory_order_relaxed);
  }
  // The host's answers in flight now.
  uint64_t peer_reply_bytes() const {
    return call_->host->reply_bytes.load(std::memory_order_relaxed);
  }

 private:
  friend class CallLedger;
  Ticket(CallLedger* ledger, Call* call) : ledger_(ledger), call_(call) {}

  CallLedger* ledger_;  // Where the call is charged; borrowed.
  Call* call_;          // Its entry; the ledger's.
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_RPC_CALL_LEDGER_H_
