#include "server/rpc/call_door.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/ops/log_limit.h"
#include "server/rpc/server_call.h"

namespace metasrv::server {

CallDoor::CallDoor(const core::Leadership* leadership, AdminAuth auth,
                   DoorOptions options, ReplyBudget* replies,
                   const core::Clock* clock, Metrics* metrics)
    : leadership_(leadership),
      options_(options),
      replies_(replies),
      metrics_(Metrics::OrDiscard(metrics)),
      ledger_(options.peers),
      backoff_(options.auth_backoff, clock),
      auth_(std::move(auth)) {}

void CallDoor::SetAdminAuth(AdminAuth auth) {
  absl::MutexLock lock(&auth_mu_);
  auth_ = std::move(auth);
}

absl::Status CallDoor::Enter(const MethodRow& row, ServerCall* call) {
  bool per_peer = false;
  absl::StatusOr<PeerLedger::Ticket> ticket =
      ledger_.Enter(call->context()->peer(), &per_peer);
  if (!ticket.ok()) {
    metrics_->DoorRefused(per_peer ? DoorRefusal::kPeerCalls
                                   : DoorRefusal::kCalls);
    LogLimited(spdlog::level::warn, "door_calls_refused",
               PeerLedger::HostOf(call->context()->peer()),
               "call {} from {} refused: {}", row.name, call->context()->peer(),
               std::string(ticket.status().message()));
    return ticket.status();
  }
  call->SetTicket(*std::move(ticket));
  if (row.admin) return CheckAdmin(row, call->context());
  return absl::OkStatus();
}

absl::Status CallDoor::CheckAdmin(const MethodRow& row,
                                  grpc::ServerContextBase* context) {
  const std::string peer = context->peer();
  const absl::string_view host = PeerLedger::HostOf(peer);
  if (const absl::Duration wait = backoff_.WaitOf(host);
      wait > absl::ZeroDuration()) {
    metrics_->DoorRefused(DoorRefusal::kAuthBackoff);
    LogLimited(spdlog::level::warn, "admin_call_backoff", host,
               "admin call {} from {} refused unchecked: its host failed too "
               "often and waits {} more",
               row.name, peer,
               absl::FormatDuration(absl::Ceil(wait, absl::Seconds(1))));
    return absl::ResourceExhaustedError(absl::StrCat(
        "too many failed admin attempts from this host; the next is checked "
        "in ",
        absl::FormatDuration(absl::Ceil(wait, absl::Seconds(1)))));
  }
  const auto& metadata = context->client_metadata();
  auto it = metadata.find("authorization");
  absl::string_view authorization;
  if (it != metadata.end()) {
    authorization = absl::string_view(it->second.data(), it->second.size());
  }
  absl::Status allowed;
  {
    absl::MutexLock lock(&auth_mu_);
    allowed = auth_.Check(authorization, peer);
  }
  if (!allowed.ok()) {
    const absl::Duration wait = backoff_.Failed(host);
    metrics_->DoorRefused(DoorRefusal::kAuthFailed);
    LogLimited(spdlog::level::warn, "admin_call_refused", host,
               "admin call {} from {} refused: {} (its host waits {})",
               row.name, peer, std::string(allowed.message()),
               absl::FormatDuration(wait));
    return allowed;
  }
  backoff_.Succeeded(host);
  return absl::OkStatus();
}

absl::Status CallDoor::TakeReply(ServerCall* call, uint64_t bytes) {
  const uint64_t share = options_.peers.max_reply_bytes_per_peer;
  const uint64_t budget = replies_ == nullptr ? 0 : replies_->limit();
  if ((budget != 0 && bytes > budget) || (share != 0 && bytes > share)) {
    // Larger than the whole budget or a client's share: it would never fit;
    // retrying cannot help, asking for less can.
    return absl::FailedPreconditionError(
        absl::StrCat("the answer has ", bytes,
                     " bytes, more than --max_reply_bytes_in_flight (", budget,
                     ") or --max_reply_bytes_per_peer (", share,
                     "); ask for fewer nodes, flows or keys"));
  }
  PeerLedger::Ticket* ticket = call->ticket();
  if (ticket != nullptr && !ticket->TakeReply(bytes)) {
    metrics_->DoorRefused(DoorRefusal::kReplyShare);
    return absl::ResourceExhaustedError(absl::StrCat(
        "this client's host holds ", ticket->peer_reply_bytes(),
        " bytes of answers it has not read, its share of the reply budget "
        "(--max_reply_bytes_per_peer ",
        share, "); read them or retry later"));
  }
  if (replies_ != nullptr && !replies_->TryTake(bytes)) {
    if (ticket != nullptr) ticket->GiveReply(bytes);
    return absl::ResourceExhaustedError(absl::StrCat(
        "too many answers in flight that clients have not read (",
        replies_->used(), " of ", replies_->limit(), " bytes); retry later"));
  }
  return absl::OkStatus();
}

void CallDoor::GiveReply(ServerCall* call, uint64_t bytes) {
  if (PeerLedger::Ticket* ticket = call->ticket(); ticket != nullptr) {
    ticket->GiveReply(bytes);
  }
  if (replies_ != nullptr) replies_->Give(bytes);
}

}  // namespace metasrv::server
