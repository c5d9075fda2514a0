// The one door every call comes through, whatever its method: it is
// charged to its peer when accepted (call_ledger.h), an admin call's token
// is checked then (a wrong one's answer delayed, ops/auth_backoff.h),
// its request must arrive within --request_timeout, it is admitted by its
// leader policy once decoded (method_table.h), and its answer is charged to
// its peer's share of the reply budget until the socket has taken it (an
// answer not written within --reply_stall_limit is ended by the transport,
// H2Connection::Tick, and given back then). The dispatcher and the three
// shapes apply it (the streams' leader policy per request, through
// AdmitLeader()); services only serve what it admitted. It knows nothing of gRPC's calls: it is given a
// call's peer and authorization and answers with a ticket or a status.
#ifndef METASRV_SERVER_RPC_CALL_DOOR_H_
#define METASRV_SERVER_RPC_CALL_DOOR_H_

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/clock.h"
#include "core/leadership.h"
#include "server/ops/admin_auth.h"
#include "server/ops/auth_backoff.h"
#include "server/ops/metrics.h"
#include "server/ops/refusal_watch.h"
#include "server/rpc/peer_address.h"
#include "server/rpc/method_table.h"
#include "server/rpc/call_ledger.h"
#include "server/rpc/reply_budget.h"

namespace metasrv::server {

// What the door holds every call to.
struct DoorOptions {
  // Bytes of answers sent but not yet read by their clients, over all
  // hosts; past it, new answers get RESOURCE_EXHAUSTED. 0: no limit.
  uint64_t max_reply_bytes_in_flight = 128 << 20;
  PeerLimits peers;  // Calls open, in all and per peer; a peer's replies.
  // A call whose (first) request has not arrived by then is ended.
  absl::Duration request_timeout = absl::Seconds(10);
  // The least silence that ends a heartbeat stream told its interval
  // (SilenceLimitFor); 0: the rule alone.
  absl::Duration heartbeat_silence_limit = absl::ZeroDuration();
  // How often silent heartbeat streams are looked for: a quarter of the
  // shortest limit a stream can have, within [10 ms, 1 s] (the settings
  // decide it); 0: never.
  absl::Duration sweep_period = absl::ZeroDuration();
  // An answer the client has not taken by then is cancelled.
  absl::Duration reply_stall_limit = absl::Seconds(5);
  AuthBackoff::Options auth_backoff;  // Failed admin attempts.
  // Answers smaller than this do not attach their call while they wait
  // (unless the budget or the calls are crowded: Watches): an HTTP/2
  // connection's first window takes them at once, and the stall limit
  // times every answer anyway.
  uint64_t watched_reply_bytes = 64 << 10;
};

// Options of a door that holds a call to nothing but its request timeout
// and the stall limit: no budget, no bounds (the null object of tests of the
// runtime alone; with a leadership that leads, it admits every call).
inline DoorOptions OpenDoorOptions() {
  DoorOptions options;
  options.max_reply_bytes_in_flight = 0;
  return options;
}

// How long a heartbeat stream may be silent once its handshake answer told
// its client to send every `interval` and to retry after `retry`: three
// missed heartbeats and a retry, as upstream's lease counts them, and never
// less than DoorOptions::heartbeat_silence_limit.
inline absl::Duration SilenceLimit(const DoorOptions& options,
                                   absl::Duration interval,
                                   absl::Duration retry) {
  return std::max(3 * interval + retry, options.heartbeat_silence_limit);
}

// Thread-safe: the admin rights may be replaced while calls come.
class CallDoor {
 public:
  // Borrows the rest; each must outlive the door. `metrics` may be null
  // (not counted).
  CallDoor(const core::Leadership* leadership, AdminAuth auth,
           DoorOptions options, const core::Clock* clock, Metrics* metrics);

  // A call of `row` was accepted (its HEADERS came) from `peer` (its
  // connection's address, taken at accept), carrying `authorization` (its "authorization" header, ""
  // when none): charges it to its peer, setting `*ticket` (which holds the
  // charge until it is destroyed, so for as long as the call lives, refused
  // or not), and for an admin method checks the token, always: the right
  // one works whatever others guessed. The status to finish it with when
  // refused: kResourceExhausted past a bound (nothing charged);
  // kUnauthenticated or kPermissionDenied for the token, to be sent no
  // sooner than `*answer_at` (monotonic, Now()'s clock; set only then).
  absl::Status Enter(const MethodRow& row, const PeerAddress& peer,
                     absl::string_view authorization,
                     std::optional<CallLedger::Ticket>* ticket,
                     absl::Time* answer_at = nullptr)
      ABSL_LOCKS_EXCLUDED(auth_mu_);

  // The leader policy of `method` now (method_table.h).
  absl::StatusOr<Admission> AdmitLeader(Method method) const {
    return server::AdmitLeader(method, *leadership_);
  }

  // Charges an answer of `bytes` of a call of `row` to the peer of `ticket`
  // (null: no peer share) and to the reply budget: the one exit every
  // answer of every method goes through. At a full budget a host under its
  // fair share of it still gets room: the host holding the most gives back
  // its longest-idle answer (CallLedger::MakeReplyRoom). kResourceExhausted
  // if the host's share or the budget is full otherwise, kFailedPrecondition
  // if it could never fit; nothing is taken then.
  // An answer of a row that is always answered is charged and never
  // refused: others' unread answers cannot starve it.
  absl::Status TakeReply(const MethodRow& row, CallLedger::Ticket* ticket,
                         uint64_t bytes);
  // Gives back what TakeReply() took.
  void GiveReply(CallLedger::Ticket* ticket, uint64_t bytes);

  // Holds `bytes` of a message shared by many streams (a watch state) in
  // the reply budget for as long as the charge lives, whether or not they
  // fit: memory held anyway, which others' answers must see.
  ReplyCharge HoldShared(uint64_t bytes) {
    return ReplyCharge(&replies_, bytes);
  }
  // Whether answers in flight hold more than the reply budget.
  bool RepliesExceeded() const { return replies_.Exceeded(); }
  // Whether the call of an answer of `bytes` is attached while the answer
  // waits (one the ledger may end for another host): a large one, or any
  // while answers in flight hold more than a sixteenth of the budget or
  // calls open reach half of --max_calls (CallLedger::Crowded). Below that,
  // nothing costs a lock. (Every answer is timed whatever its size: one not
  // written within --reply_stall_limit ends its call.)
  bool Watches(uint64_t bytes) const {
    return bytes >= options_.watched_reply_bytes ||
           (replies_.limit() != 0 && replies_.used() > replies_.limit() / 16) ||
           ledger_.Crowded();
  }
  // The door's time (monotonic), to time writes by.
  absl::Time Now() const { return clock_->Monotonic(); }
  // SilenceLimit() under this door's options.
  absl::Duration SilenceLimitFor(absl::Duration interval,
                                 absl::Duration retry) const {
    return SilenceLimit(options_, interval, retry);
  }
  // Before its handshake is answered a stream has been told nothing: its
  // first request is due within --request_timeout, as every call's is.
  absl::Duration UntoldSilenceLimit() const { return options_.request_timeout; }
  // Ends the heartbeat streams silent past their own limits (set by
  // StreamCall::Told, else UntoldSilenceLimit()); called periodically (the
  // dispatcher's sweep).
  void Sweep();

  // Admin calls admitted from now on are checked against `auth`.
  void SetAdminAuth(AdminAuth auth) ABSL_LOCKS_EXCLUDED(auth_mu_);

  const core::Leadership& leadership() const { return *leadership_; }
  const DoorOptions& options() const { return options_; }
  CallLedger& ledger() { return ledger_; }
  const CallLedger& ledger() const { return ledger_; }
  const ReplyBudget& replies() const { return replies_; }
  Metrics* metrics() const { return metrics_; }

  // A call of `row` got its request to its method: the port serves its kind
  // (readiness: RefusalWatch).
  void Served(const MethodRow& row);
  // A call of `row` (null: a path nobody serves) refused or ended for
  // `why`, with `status`: counted (metasrv_calls_refused_total), and, when
  // its host was `under_share` of the bound that refused it (so any host
  // would have been) and the row is of a kind readiness watches, told to
  // the watch. A host refused for holding its share is not the port's
  // outage.
  void Refused(const MethodRow* row, DoorRefusal why,
               const absl::Status& status, bool under_share = false);
  // Why the port turns away every new call of a kind that matters; empty
  // while it does not.
  std::string Refusing() const { return refusals_.Refusing(); }

 private:
  absl::Status CheckAdmin(const MethodRow& row, const PeerAddress& peer,
                          absl::string_view authorization,
                          absl::Time* answer_at) ABSL_LOCKS_EXCLUDED(auth_mu_);

  const core::Leadership* const leadership_;  // Who leads; borrowed.
  const DoorOptions options_;
  ReplyBudget replies_;                       // Answers in flight, in all.
  Metrics* const metrics_;                    // Never null.
  const core::Clock* const clock_;            // Times stalls; borrowed.
  CallLedger ledger_;  // Open calls by host and kind; replies per host.
  AuthBackoff backoff_;  // When wrong admin tokens are answered.
  RefusalWatch refusals_;  // Whether a kind that matters is refused.
  mutable absl::Mutex auth_mu_;               // Guards auth_.
  AdminAuth auth_ ABSL_GUARDED_BY(auth_mu_);  // Who may call admin methods.
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_RPC_CALL_DOOR_H_
