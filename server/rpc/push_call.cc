#include "server/rpc/push_call.h"

#include <string>
#include <utility>
#include <vector>

#include "server/rpc/raw_request.h"

namespace metasrv::server {

SharedMessage::SharedMessage(SharedPieces pieces)
    : pieces_(std::move(pieces)), length_(LengthOf(pieces_)) {}

SharedMessage::SharedMessage(const google::protobuf::MessageLite& message) {
  auto text = std::make_shared<std::string>();
  message.SerializeToString(text.get());
  length_ = text->size();
  pieces_.push_back(SharedBytes::Of(std::move(text)));
}

CallFactory PushCall::Factory(MakeHandler make) {
  auto shared = std::make_shared<const MakeHandler>(std::move(make));
  return [shared](H2Start start) {
    (new PushCall(std::move(start), (*shared)()))->Open();
  };
}

std::optional<std::vector<SharedBytes>> PushCall::Choose(
    std::shared_ptr<const PushItem> item) {
  const SharedMessage* message = handler_->Choose(*item);
  if (message == nullptr) return std::nullopt;
  in_flight_ = std::move(item);
  return message->pieces();
}

absl::Status PushCall::Admit(Compression compression,
                             const std::string& message) {
  if (absl::Status admitted =
          DecodeAndAdmit(compression, message, handler_->request()).status();
      !admitted.ok()) {
    return admitted;
  }
  if (!row_->always_answered && limits_.door->RepliesExceeded()) {
    return absl::ResourceExhaustedError(
        "streams that do not read hold more than "
        "--max_reply_bytes_in_flight; retry later");
  }
  return absl::OkStatus();
}

void PushCall::OnMessage(H2Call* stream, Compression compression,
                         std::string message) {
  RequestCame();
  absl::Status accepted = Admit(compression, message);
  if (accepted.ok()) accepted = handler_->OnRequest(this);
  if (accepted.ok()) accepted = Attach();
  if (!accepted.ok()) {
    End(accepted, true);
    return;
  }
  std::optional<std::vector<SharedBytes>> first;
  {
    absl::MutexLock lock(&mu_);
    started_ = true;
    if (next_ != nullptr) first = Choose(std::move(next_));
    next_.reset();
  }
  if (first.has_value()) stream->Send(*std::move(first));
}

bool PushCall::Offer(std::shared_ptr<const PushItem> item) {
  std::optional<std::vector<SharedBytes>> bytes;
  {
    absl::MutexLock lock(&mu_);
    if (over_) return false;
    if (offered_.has_value() && item->sequence <= *offered_) return false;
    offered_ = item->sequence;
    if (!started_ || in_flight_ != nullptr) {
      const bool skipped = next_ != nullptr;
      next_ = std::move(item);
      return skipped;
    }
    bytes = Choose(std::move(item));
  }
  if (bytes.has_value()) {
    OnLoop([bytes = *std::move(bytes)](H2Call* stream) mutable {
      if (stream != nullptr) stream->Send(std::move(bytes));
    });
  }
  return false;
}

void PushCall::OnDrained(H2Call* stream) {
  H2DoorCall::OnDrained(stream);
  std::optional<std::vector<SharedBytes>> bytes;
  {
    absl::MutexLock lock(&mu_);
    in_flight_.reset();
    if (next_ != nullptr) bytes = Choose(std::move(next_));
    next_.reset();
  }
  if (bytes.has_value() && !ended_) stream->Send(*std::move(bytes));
}

void PushCall::OnEnded() {
  {
    absl::MutexLock lock(&mu_);
    over_ = true;
    in_flight_.reset();
    next_.reset();
  }
  if (stalled_) handler_->OnStalled();
  handler_->OnClose();
}

}  // namespace metasrv::server
