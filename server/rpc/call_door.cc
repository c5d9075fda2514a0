#include "server/rpc/call_door.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/ops/log_limit.h"

namespace metasrv::server {

CallDoor::CallDoor(const core::Leadership* leadership, AdminAuth auth,
                   DoorOptions options, const core::Clock* clock,
                   Metrics* metrics)
    : leadership_(leadership),
      options_(options),
      replies_(options.max_reply_bytes_in_flight),
      metrics_(Metrics::OrDiscard(metrics)),
      clock_(clock),
      ledger_(options.peers, clock),
      backoff_(options.auth_backoff, clock),
      refusals_(clock),
      auth_(std::move(auth)) {}

namespace {

// The kinds readiness watches: a flownode's heartbeats, frontends' reads.
std::optional<RefusalWatch::Kind> WatchedKind(Method method) {
  switch (method) {
    case Method::kHeartbeat:
    case Method::kAskLeader:
      return RefusalWatch::Kind::kHeartbeat;
    case Method::kRange:
    case Method::kBatchGet:
    case Method::kGetFlowState:
    case Method::kListFlownodes:
      return RefusalWatch::Kind::kRead;
    default:
      return std::nullopt;
  }
}

}  // namespace

void CallDoor::Served(const MethodRow& row) {
  if (auto kind = WatchedKind(row.method)) refusals_.Served(*kind);
}

void CallDoor::Refused(const MethodRow* row, DoorRefusal why,
                       const absl::Status& status, bool under_share) {
  metrics_->DoorRefused(why);
  if (row == nullptr || !under_share) return;
  if (auto kind = WatchedKind(row->method)) {
    refusals_.Refused(*kind, status.ToString());
  }
}

void CallDoor::SetAdminAuth(AdminAuth auth) {
  absl::MutexLock lock(&auth_mu_);
  auth_ = std::move(auth);
}

absl::Status CallDoor::Enter(const MethodRow& row, const PeerAddress& peer,
                             absl::string_view authorization,
                             std::optional<CallLedger::Ticket>* ticket,
                             absl::Time* answer_at) {
  EnterNote note;
  absl::StatusOr<CallLedger::Ticket> entered =
      ledger_.Enter(peer.host, CallKindOf(row.method), &note);
  if (note.made_room) {
    metrics_->DoorRefused(DoorRefusal::kEvicted);
    LogLimited(spdlog::level::warn, "door_fair_share", note.cut_host,
               "a call from {} was {} (for {} from {})", note.cut_host,
               note.cut_reason, row.name, peer.text);
  }
  if (!entered.ok()) {
    using Refusal = EnterNote::Refusal;
    Refused(&row,
            note.why == Refusal::kPeerCalls ? DoorRefusal::kPeerCalls
            : note.why == Refusal::kKind    ? DoorRefusal::kStreams
                                            : DoorRefusal::kCalls,
            entered.status(), note.under_share);
    LogLimited(spdlog::level::warn, "door_calls_refused", peer.host,
               "call {} from {} refused: {}", row.name, peer.text,
               std::string(entered.status().message()));
    return entered.status();
  }
  ticket->emplace(*std::move(entered));
  if (row.admin) return CheckAdmin(row, peer, authorization, answer_at);
  return absl::OkStatus();
}

absl::Status CallDoor::CheckAdmin(const MethodRow& row,
                                  const PeerAddress& peer,
                                  absl::string_view authorization,
                                  absl::Time* answer_at) {
  const std::string& host = peer.host;
  absl::Status allowed;
  {
    absl::MutexLock lock(&auth_mu_);
    allowed = auth_.Check(authorization, peer.loopback);
  }
  if (allowed.ok()) {
    backoff_.Succeeded(host);
    return absl::OkStatus();
  }
  const absl::Time at = backoff_.Failed(host);
  const absl::Duration wait = std::max(at - Now(), absl::ZeroDuration());
  if (answer_at != nullptr) *answer_at = at;
  metrics_->DoorRefused(DoorRefusal::kAuthFailed);
  if (wait > absl::ZeroDuration()) {
    metrics_->DoorRefused(DoorRefusal::kAuthBackoff);
  }
  LogLimited(spdlog::level::warn, "admin_call_refused", host,
             "admin call {} from {} refused: {} (answered in {})", row.name,
             peer.text, std::string(allowed.message()),
             absl::FormatDuration(absl::Trunc(wait, absl::Milliseconds(1))));
  return allowed;
}

absl::Status CallDoor::TakeReply(const MethodRow& row,
                                 CallLedger::Ticket* ticket, uint64_t bytes) {
  if (row.always_answered) {
    if (ticket != nullptr) ticket->ChargeReply(bytes);
    replies_.Take(bytes);
    return absl::OkStatus();
  }
  const uint64_t share = options_.peers.max_reply_bytes_per_peer;
  const uint64_t budget = replies_.limit();
  if ((budget != 0 && bytes > budget) || (share != 0 && bytes > share)) {
    // Larger than the whole budget or a client's share: it would never fit;
    // retrying cannot help, asking for less can.
    return absl::FailedPreconditionError(
        absl::StrCat("the answer has ", bytes,
                     " bytes, more than --max_reply_bytes_in_flight (", budget,
                     ") or --max_reply_bytes_per_peer (", share,
                     "); ask for fewer nodes, flows or keys"));
  }
  if (ticket != nullptr && !ticket->TakeReply(bytes)) {
    metrics_->DoorRefused(DoorRefusal::kReplyShare);
    return absl::ResourceExhaustedError(absl::StrCat(
        "this client's host holds ", ticket->peer_reply_bytes(),
        " bytes of answers it has not read, its share of the reply budget "
        "(--max_reply_bytes_per_peer ",
        share, "); read them or retry later"));
  }
  if (!replies_.TryTake(bytes)) {
    EnterNote note;
    if (ticket != nullptr &&
        ledger_.MakeReplyRoom(*ticket, replies_.limit(), &note)) {
      // Over the budget by what is being ended (at most 64 answers).
      replies_.Take(bytes);
      metrics_->DoorRefused(DoorRefusal::kEvicted);
      LogLimited(spdlog::level::warn, "door_fair_share", note.cut_host,
                 "an answer to {} was {} (for an answer of {})", note.cut_host,
                 note.cut_reason, row.name);
      return absl::OkStatus();
    }
    if (ticket != nullptr) ticket->GiveReply(bytes);
    absl::Status full = absl::ResourceExhaustedError(absl::StrCat(
        "too many answers in flight that clients have not read (",
        replies_.used(), " of ", replies_.limit(), " bytes); retry later"));
    Refused(&row, DoorRefusal::kReplyBudget, full);
    return full;
  }
  return absl::OkStatus();
}

void CallDoor::Sweep() {
  const int ended = ledger_.AbortSilent(
      CallKind::kHeartbeat, UntoldSilenceLimit(), [](absl::Duration limit) {
        return absl::DeadlineExceededError(absl::StrCat(
            "no heartbeat for ", absl::FormatDuration(limit),
            ", this stream's limit (3 x the interval its handshake answer "
            "told + the retry interval; --request_timeout before that): the "
            "node is taken for dead"));
      });
  for (int i = 0; i < ended; ++i) metrics_->DoorRefused(DoorRefusal::kSilent);
  if (ended > 0) {
    spdlog::warn("ended {} heartbeat streams silent past their limits", ended);
  }
}

void CallDoor::GiveReply(CallLedger::Ticket* ticket, uint64_t bytes) {
  if (ticket != nullptr) ticket->GiveReply(bytes);
  replies_.Give(bytes);
}

}  // namespace metasrv::server
