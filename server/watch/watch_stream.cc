#include "server/watch/watch_stream.h"

#include <grpc/grpc.h>

#include <utility>

#include "metasrv/v1/metasrv.pb.h"
#include "server/ops/log_limit.h"
#include "server/rpc/grpc_status.h"
#include "server/rpc/peer_ledger.h"
#include "server/rpc/grpc151_zstd_requests.h"
#include "spdlog/spdlog.h"

namespace metasrv::server {

WatchStream::WatchStream(ServerCall* call, WatchHub* hub, const CallDoor* door,
                         size_t max_request_bytes, Metrics* metrics)
    : call_(call),
      hub_(hub),
      door_(door),
      max_request_bytes_(max_request_bytes),
      ordinal_(hub->NextOrdinal()),
      metrics_(Metrics::OrDiscard(metrics)),
      read_(this, &WatchStream::OnRead),
      metadata_(this, &WatchStream::OnMetadataSent),
      written_(this, &WatchStream::OnWriteDone),
      finished_(this, &WatchStream::OnFinished) {}

void WatchStream::Start() {
  call_->stream()->Read(&request_, call_->Begin(&read_));
}

void WatchStream::OnRead(bool ok) {
  // The door's deadline for a first request no longer applies (a late one
  // was cancelled: its read failed).
  call_->RequestArrived();
  if (!ok) {
    FinishOnce(grpc::Status(grpc::StatusCode::INTERNAL,
                            "the call carried no request message"));
    return;
  }
  absl::Status refused =
      door_ == nullptr ? absl::OkStatus()
                       : door_->AdmitLeader(Method::kWatchFlowState).status();
  metasrv::v1::WatchFlowStateRequest parsed;
  if (refused.ok()) {
    refused = DecodeRequest(&request_, max_request_bytes_, &parsed);
  }
  request_.Clear();
  if (refused.ok() && hub_->OverBudget()) {
    refused = absl::ResourceExhaustedError(
        "watchers that do not read hold more than "
        "--max_reply_bytes_in_flight; retry later");
  }
  if (refused.ok()) {
    // Set before a wave can see this watcher.
    deltas_ = parsed.deltas();
    tier_ = hub_->TierFor(absl::Milliseconds(parsed.min_interval_ms()));
    // The headers go first, through the C++ stream (so that its Finish()
    // sends only the status), before any state: a wave may offer one as
    // soon as the watcher is added.
    call_->stream()->SendInitialMetadata(call_->Begin(&metadata_));
    refused = hub_->Add(this);
  }
  if (!refused.ok()) {
    FinishOnce(ToGrpcStatus(refused, call_->context()));
    return;
  }
  registered_ = true;
  // Registered first, so no push is missed; an older state offered after a
  // newer one is dropped. None: the publisher is about to send one.
  std::shared_ptr<const WatchSnapshot> current = hub_->Current(tier_);
  if (current != nullptr) Offer(std::move(current));
}

void WatchStream::Offer(std::shared_ptr<const WatchSnapshot> snapshot) {
  bool stalled = false;  // End it rather than send.
  {
    absl::MutexLock lock(&mu_);
    if (end_.finished || end_.finish_after_write.has_value()) return;
    if (offered_.has_value() && snapshot->sequence <= *offered_) return;
    offered_ = snapshot->sequence;
    if (end_.write_in_flight) {
      if (hub_->OverBudget() &&
          hub_->clock()->Monotonic() - write_started_ > hub_->stall_limit()) {
        next_.reset();
        end_.finish_after_write = grpc::Status(
            grpc::StatusCode::RESOURCE_EXHAUSTED, "watcher does not read");
        stalled = true;
      } else {
        if (next_ != nullptr) metrics_->WatchSkipped();
        next_ = std::move(snapshot);
        return;
      }
    } else {
      StartWriteOf(std::move(snapshot));
    }
  }
  if (stalled) {
    EndStalled();
    return;
  }
  Write();
}

void WatchStream::Write() {
  grpc_op op = {};
  op.op = GRPC_OP_SEND_MESSAGE;
  op.data.send_message.send_message = write_buffer_;
  if (call_->StartBatch(&op, 1, &written_) != GRPC_CALL_OK) {
    // Not expected (one write at a time, a valid call): complete it as a
    // failed write, which ends the stream.
    spdlog::error("watch stream from {}: write refused",
                  call_->context()->peer());
    call_->Begin(&written_);
    written_.Complete(false);
  }
}

void WatchStream::EndStalled() {
  metrics_->WatchStalled();
  // What the client is told, ahead of the cancellation gRPC reports.
  call_->Finishing(GRPC_STATUS_RESOURCE_EXHAUSTED);
  LogLimited(spdlog::level::warn, "watch_stalled",
             PeerLedger::HostOf(call_->context()->peer()),
             "ended a WatchFlowState stream from {}: its write was in flight "
             "for over {} while watchers held more than "
             "--max_reply_bytes_in_flight",
             call_->context()->peer(),
             absl::FormatDuration(hub_->stall_limit()));
  grpc_call_cancel_with_status(
      call_->c_call(), GRPC_STATUS_RESOURCE_EXHAUSTED,
      "this watcher did not read its stream while answers in flight exceeded "
      "--max_reply_bytes_in_flight; reconnect, and read what is sent",
      nullptr);
}

void WatchStream::StartWriteOf(std::shared_ptr<const WatchSnapshot> snapshot) {
  end_.write_in_flight = true;
  write_started_ = hub_->clock()->Monotonic();
  const bool follows =
      sent_publish_ != 0 && snapshot->publish == sent_publish_ + 1;
  write_buffer_ = deltas_ && follows && snapshot->delta != nullptr
                      ? snapshot->delta->NewWrite()
                      : snapshot->message->NewWrite();
  sent_publish_ = snapshot->publish;
  in_flight_ = std::move(snapshot);
}

void WatchStream::OnWriteDone(bool ok) {
  StreamEnd::AfterWrite after;
  {
    absl::MutexLock lock(&mu_);
    after = end_.WriteDone(ok);
    // gRPC is done with the bytes: the state they are of may go.
    grpc_byte_buffer_destroy(write_buffer_);
    write_buffer_ = nullptr;
    in_flight_.reset();
    if (!after.go_on) {
      next_.reset();
    } else if (next_ != nullptr) {
      StartWriteOf(std::move(next_));
      next_.reset();
    } else {
      return;  // Idle until the next Offer().
    }
  }
  if (after.finish.has_value()) {
    FinishOnce(*after.finish);
  } else if (after.go_on) {
    Write();
  }
}

void WatchStream::OnCancel() {
  // The client went away. A write in flight completes with !ok.
  Abort(grpc::Status(grpc::StatusCode::CANCELLED, "watcher cancelled"));
}

void WatchStream::Abort(const grpc::Status& status) {
  {
    absl::MutexLock lock(&mu_);
    next_.reset();
    if (!end_.Abort(status)) return;
  }
  StartFinish(status);
}

void WatchStream::FinishOnce(const grpc::Status& status) {
  {
    absl::MutexLock lock(&mu_);
    if (!end_.TryFinish()) return;
  }
  StartFinish(status);
}

void WatchStream::StartFinish(const grpc::Status& status) {
  call_->Finishing(static_cast<int>(status.error_code()));
  call_->stream()->Finish(status, call_->BeginFinish(&finished_));
}

void WatchStream::OnDone() {
  if (registered_) hub_->Remove(this);
}

}  // namespace metasrv::server
