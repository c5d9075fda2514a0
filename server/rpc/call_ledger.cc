#include "server/rpc/call_ledger.h"

#include <algorithm>
#include <limits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/fair_share.h"

namespace metasrv::server {
namespace {

// Calls evicted and not yet gone, at most: each let one call in over its
// bound, so this bounds how far past a bound the ledger ever is.
constexpr int64_t kMaxEvicting = 64;

int64_t CountOf(const std::array<int64_t, kCallKinds>& by_kind, int64_t all,
                int kind) {
  return kind < 0 ? all : by_kind[kind];
}

}  // namespace

const char* CallKindName(CallKind kind) {
  switch (kind) {
    case CallKind::kUnary:
      return "unary call";
    case CallKind::kHeartbeat:
      return "heartbeat stream";
    case CallKind::kWatch:
      return "flow-state watch";
    case CallKind::kHealthWatch:
      return "health watch";
    case CallKind::kReflection:
      return "reflection stream";
  }
  return "call";
}

CallLedger::CallLedger(PeerLimits limits, const core::Clock* clock)
    : limits_(limits), clock_(clock) {}

absl::StatusOr<CallLedger::Ticket> CallLedger::Enter(
    absl::string_view host_key, CallKind kind, EnterNote* note) {
  const std::string key(host_key);
  const int k = static_cast<int>(kind);
  EnterNote unused;
  if (note == nullptr) note = &unused;
  absl::MutexLock lock(&mu_);
  auto found = hosts_.find(key);
  Host* host = found == hosts_.end() ? nullptr : found->second.get();
  if (host != nullptr && limits_.max_calls_per_peer != 0 &&
      static_cast<uint64_t>(host->calls) >= limits_.max_calls_per_peer) {
    note->why = EnterNote::Refusal::kPeerCalls;
    return absl::ResourceExhaustedError(absl::StrCat(
        "this client's host has ", host->calls,
        " calls open, its limit (--max_calls_per_peer); retry later"));
  }
  int64_t share = 0;
  if (const uint64_t limit = limits_.max_open[k];
      limit != 0 && static_cast<uint64_t>(by_kind_[k]) >= limit &&
      !MakeRoom(host, k, limit, &share, note)) {
    note->why = EnterNote::Refusal::kKind;
    note->under_share = (host == nullptr ? 0 : host->by_kind[k]) < share;
    return absl::ResourceExhaustedError(absl::StrCat(
        "the server has ", by_kind_[k], " ", CallKindName(kind),
        "s open (limit ", limit, ", --max_streams), and this host holds ",
        host == nullptr ? 0 : host->by_kind[k], ", its fair share ", share,
        " or more; retry later"));
  }
  if (limits_.max_calls != 0 &&
      static_cast<uint64_t>(calls_) >= limits_.max_calls &&
      !MakeRoom(host, -1, limits_.max_calls, &share, note)) {
    note->why = EnterNote::Refusal::kCalls;
    const int64_t mine = host == nullptr ? 0 : host->calls;
    note->under_share = mine < share;
    return absl::ResourceExhaustedError(absl::StrCat(
        "the server has ", calls_,
        " calls open, its limit (--max_calls), "
        "and this host holds ",
        mine,
        mine >= share ? absl::StrCat(", its fair share ", share, " or more")
                      : absl::StrCat(" (its fair share is ", share,
                                     "; no call of a host over its share "
                                     "can be ended for it now)"),
        "; retry later"));
  }
  if (host == nullptr) {
    auto made = std::make_unique<Host>();
    made->key = std::string(key);
    host = made.get();
    hosts_.emplace(made->key, std::move(made));
  }
  if (host->by_kind[k]++ == 0) ++hosts_by_kind_[k];
  ++host->calls;
  ++by_kind_[k];
  ++calls_;
  open_now_.store(calls_, std::memory_order_relaxed);
  auto made = std::make_unique<Call>();
  Call* call = made.get();
  call->host = host;
  call->kind = kind;
  call->active.store(NowNs(), std::memory_order_relaxed);
  host->open.emplace(call, std::move(made));
  return Ticket(this, call);
}

bool CallLedger::MakeRoom(const Host* asker, int kind, uint64_t limit,
                          int64_t* share, EnterNote* note) {
  core::FairShare<const Host*> fair(static_cast<int64_t>(limit), asker);
  for (const auto& [key, host] : hosts_) {
    const int64_t held = CountOf(host->by_kind, host->calls, kind);
    if (held > 0) fair.Count(host.get(), held);
  }
  *share = fair.share();
  if (!fair.AskerMayTake() || evicting_ >= kMaxEvicting) return false;
  return EvictFor(fair.Over(), kind, /*replying=*/false, note,
                  [&](int64_t held) {
                    return absl::StrCat(
                        "ended to make room for another client host: this "
                        "host held ",
                        held, " of the ", limit, " ",
                        kind < 0 ? "calls" : CallKindName(CallKind(kind)),
                        " the server allows, more than its fair share of ",
                        *share, "; retry later");
                  });
}

bool CallLedger::EvictFor(
    const std::vector<std::pair<int64_t, const Host*>>& over, int kind,
    bool replying, EnterNote* note,
    absl::FunctionRef<std::string(int64_t)> reason) {
  const int64_t now = NowNs();
  for (const auto& [held, host] : over) {
    Call* victim = IdlestOf(*host, kind, replying, now);
    if (victim == nullptr) continue;
    victim->evicted = true;
    ++evicting_;
    evicted_.fetch_add(1);
    note->made_room = true;
    note->cut_host = host->key;
    note->cut_reason = reason(held);
    Tell(victim, absl::ResourceExhaustedError(note->cut_reason));
    return true;
  }
  return false;
}

CallLedger::Call* CallLedger::IdlestOf(const Host& host, int kind,
                                       bool replying, int64_t now) {
  Call* victim = nullptr;
  int64_t oldest = std::numeric_limits<int64_t>::max();
  for (const auto& [call, owned] : host.open) {
    if (call->abort == nullptr || call->told) continue;
    if (kind >= 0 && static_cast<int>(call->kind) != kind) continue;
    if (replying && call->reply_bytes.load(std::memory_order_relaxed) == 0) {
      continue;
    }
    const int64_t active = call->active.load(std::memory_order_relaxed);
    if (now - active < call->live_ns.load(std::memory_order_relaxed)) {
      continue;  // A heartbeat stream at its cadence.
    }
    if (active < oldest) {
      oldest = active;
      victim = call;
    }
  }
  return victim;
}

void CallLedger::Tell(Call* call, const absl::Status& status) {
  if (call->told || call->abort == nullptr) return;
  call->told = true;
  call->abort->Abort(status);
}

void CallLedger::Leave(Call* call) {
  absl::MutexLock lock(&mu_);
  Host* host = call->host;
  const int k = static_cast<int>(call->kind);
  if (call->evicted) --evicting_;
  attached_[k].erase(call);
  host->open.erase(call);  // Deletes it.
  --calls_;
  open_now_.store(calls_, std::memory_order_relaxed);
  --by_kind_[k];
  if (--host->by_kind[k] == 0) --hosts_by_kind_[k];
  if (--host->calls > 0) return;
  // Its last call: the entry goes, so that the map holds only hosts with a
  // call open.
  hosts_.erase(hosts_.find(host->key));
}

absl::Status CallLedger::Ticket::Attach(AbortableCall* call) {
  absl::MutexLock lock(&ledger_->mu_);
  const int k = static_cast<int>(call_->kind);
  if (ledger_->closed_[k]) {
    return absl::UnavailableError("the server is shutting down");
  }
  call_->abort = call;
  ledger_->attached_[k].insert(call_);
  return absl::OkStatus();
}

void CallLedger::Ticket::Detach(AbortableCall* call) {
  absl::MutexLock lock(&ledger_->mu_);
  if (call_->abort != call) return;
  call_->abort = nullptr;
  ledger_->attached_[static_cast<int>(call_->kind)].erase(call_);
}

void CallLedger::AbortAll(CallKind kind, const absl::Status& status) {
  absl::MutexLock lock(&mu_);
  for (Call* call : attached_[static_cast<int>(kind)]) Tell(call, status);
}

void CallLedger::Close(CallKind kind, const absl::Status& status) {
  absl::MutexLock lock(&mu_);
  closed_[static_cast<int>(kind)] = true;
  for (Call* call : attached_[static_cast<int>(kind)]) Tell(call, status);
}

bool CallLedger::MakeReplyRoom(const Ticket& asker, uint64_t limit,
                               EnterNote* note) {
  absl::MutexLock lock(&mu_);
  if (limit == 0 || evicting_ >= kMaxEvicting) return false;
  core::FairShare<const Host*> fair(static_cast<int64_t>(limit),
                                   asker.call_->host);
  for (const auto& [key, host] : hosts_) {
    const auto held = static_cast<int64_t>(
        host->reply_bytes.load(std::memory_order_relaxed));
    if (held > 0) fair.Count(host.get(), held);
  }
  const int64_t share = fair.share();
  if (!fair.AskerMayTake()) return false;
  return EvictFor(fair.Over(), -1, /*replying=*/true, note,
                  [&](int64_t held) {
                    return absl::StrCat(
                        "ended to make room for another client host: this "
                        "host held ",
                        held,
                        " bytes of unread answers, more than its fair share "
                        "of ",
                        share, " of the reply budget (", limit,
                        "); read them or retry later");
                  });
}

int CallLedger::AbortSilent(
    CallKind kind, absl::Duration limit,
    absl::FunctionRef<absl::Status(absl::Duration)> status) {
  const int64_t now = NowNs();
  const int64_t fallback = absl::ToInt64Nanoseconds(limit);
  int ended = 0;
  absl::MutexLock lock(&mu_);
  for (Call* call : attached_[static_cast<int>(kind)]) {
    const int64_t own = call->silence_ns.load(std::memory_order_relaxed);
    const int64_t mine = own > 0 ? own : fallback;
    if (call->told ||
        call->active.load(std::memory_order_relaxed) >= now - mine) {
      continue;
    }
    Tell(call, status(absl::Nanoseconds(mine)));
    ++ended;
  }
  return ended;
}

int64_t CallLedger::open_calls() const {
  absl::MutexLock lock(&mu_);
  return calls_;
}

uint64_t CallLedger::open(CallKind kind) const {
  absl::MutexLock lock(&mu_);
  return static_cast<uint64_t>(by_kind_[static_cast<int>(kind)]);
}

size_t CallLedger::peers() const {
  absl::MutexLock lock(&mu_);
  return hosts_.size();
}

// Set when the host entered the ledger, never changed: no lock.
const std::string& CallLedger::Ticket::host_key() const {
  return call_->host->key;
}

}  // namespace metasrv::server
