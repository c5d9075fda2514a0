#include "server/rpc/h2_door_call.h"

#include <utility>

#include "server/rpc/grpc_status.h"
#include "server/rpc/h2_loop.h"

namespace metasrv::server {

H2DoorCall::H2DoorCall(H2Start start)
    : call_(start.call),
      row_(start.row),
      limits_(start.limits),
      loop_(start.call->loop()),
      peer_(std::move(start.peer)),
      ticket_(std::move(start.ticket)),
      book_(start.book),
      counted_(start.series),
      anchor_(std::make_shared<Anchor>(Anchor{this})) {
  if (book_ != nullptr) book_->Enter();
}

H2DoorCall::~H2DoorCall() {
  anchor_->self = nullptr;
  if (book_ != nullptr) book_->Leave();
}

absl::Status H2DoorCall::Begin() {
  call_->set_events(this);
  call_->set_deadline(
      std::min(call_->client_deadline(),
               absl::Now() + limits_.door->options().request_timeout));
  if (!ticket_.has_value()) return absl::OkStatus();
  // Idle until its request comes: the ledger may end it for another host.
  absl::Status attached = ticket_->Attach(this);
  idle_attached_ = attached.ok();
  return attached;
}

void H2DoorCall::Open() {
  H2Call* stream = call_;
  absl::Status opened = Begin();
  if (opened.ok()) opened = OnOpen();
  if (!opened.ok()) {
    End(opened, true);
    return;
  }
  stream->Next();
}

void H2DoorCall::RequestCame() {
  if (request_came_) return;
  request_came_ = true;
  if (row_ != nullptr) limits_.door->Served(*row_);
  call_->set_deadline(call_->client_deadline());
  if (idle_attached_) {
    idle_attached_ = false;
    ticket_->Detach(this);
  }
}

absl::Status H2DoorCall::Attach() {
  if (!ticket_.has_value()) return absl::OkStatus();
  idle_attached_ = false;  // Attached for good: RequestCame() keeps it.
  return ticket_->Attach(this);
}

void H2DoorCall::OnDrained(H2Call*) {
  if (const uint64_t held = held_.exchange(0); held != 0) {
    limits_.door->GiveReply(ticket(), held);
  }
}

void H2DoorCall::End(const absl::Status& status, bool greptime) {
  if (ended_ || call_ == nullptr) return;
  ended_ = true;
  WireStatus wire = ToWireStatus(status, greptime);
  counted_.Finishing(wire.code);
  call_->Finish(wire.code, wire.message, wire.trailers);
}

void H2DoorCall::Abandon(const absl::Status& status) {
  if (call_ == nullptr) return;
  ended_ = true;
  WireStatus wire = ToWireStatus(status, false);
  counted_.Finishing(wire.code);
  call_->Abandon(wire.code, wire.message);
  OnDrained(call_);  // Nothing of it will be written.
}

absl::Status H2DoorCall::Charge(uint64_t bytes) {
  if (closed_.load()) return absl::CancelledError("the call is over");
  if (absl::Status taken = limits_.door->TakeReply(*row_, ticket(), bytes);
      !taken.ok()) {
    return taken;
  }
  held_.fetch_add(bytes);
  return absl::OkStatus();
}

void H2DoorCall::OnLoop(absl::AnyInvocable<void(H2Call*)> task,
                        bool now_if_here) {
  // The call's connection is flushed once the task ran (it may have
  // queued output there); the task may end, and delete, the call.
  if (now_if_here && loop_->InLoop()) {
    const int fd = call_ != nullptr ? call_->connection_fd() : -1;
    task(call_);  // Already there: no hop.
    if (fd >= 0) loop_->Touch(fd);
    return;
  }
  loop_->Post(
      [anchor = anchor_, loop = loop_, task = std::move(task)]() mutable {
        if (anchor->self == nullptr) return;
        H2Call* call = anchor->self->call_;
        const int fd = call != nullptr ? call->connection_fd() : -1;
        task(call);
        if (fd >= 0) loop->Touch(fd);
      });
}

void H2DoorCall::Release() {
  if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
}

void H2DoorCall::Abort(const absl::Status& status) {
  // Never at once: the ledger's lock is held, and ending gives back to it.
  OnLoop([this, status](H2Call*) { End(status, false); },
         /*now_if_here=*/false);
}

void H2DoorCall::OnDeadline(H2Call*) {
  if (!request_came_) {
    limits_.door->metrics()->DoorRefused(DoorRefusal::kRequestTimeout);
    End(absl::DeadlineExceededError(
            "the request did not arrive within --request_timeout"),
        false);
    return;
  }
  End(absl::DeadlineExceededError("deadline exceeded"), false);
}

void H2DoorCall::OnClosed(H2Call* call) {
  stalled_ = call->stalled();
  // What its client was told, whoever ended it (its method, the door, the
  // transport); CANCELLED when it was reset without a status.
  if (call->status_code() >= 0) counted_.Finishing(call->status_code());
  if (!request_came_ && !ended_) {
    // Reset by its client before its request came.
    limits_.door->metrics()->DoorRefused(DoorRefusal::kResetEarly);
  }
  if (stalled_) {
    limits_.door->metrics()->DoorRefused(DoorRefusal::kReplyStalled);
    if (CallKindOf(row_->method) == CallKind::kWatch) {
      limits_.door->metrics()->WatchStalled();
    }
  }
  call_ = nullptr;
  ended_ = true;
  closed_.store(true);
  OnEnded();
  if (ticket_.has_value()) {
    ticket_->Detach(this);
    // Its answers' bytes and its slot go now, whoever still holds the call.
    if (const uint64_t held = held_.exchange(0); held != 0) {
      limits_.door->GiveReply(&*ticket_, held);
    }
    ticket_.reset();
  }
  counted_.Done();
  Release();
}

void H2Refused::Start(H2Start start, absl::Status status, bool greptime,
                      absl::Time answer_at) {
  auto* call = new H2Refused(std::move(start), std::move(status), greptime);
  absl::Status begun = call->Begin();
  if (!begun.ok() || answer_at <= absl::Now()) {
    call->End(call->status_, call->greptime_);
    return;
  }
  call->call_->set_deadline(answer_at);
}

}  // namespace metasrv::server
