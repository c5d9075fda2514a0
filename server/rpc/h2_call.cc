#include "server/rpc/h2_call.h"

#include <algorithm>
#include <string>
#include <utility>

#include "server/rpc/h2_connection.h"

namespace metasrv::server {
nghttp2_nv NoCopyField(absl::string_view name, absl::string_view value) {
  return {reinterpret_cast<uint8_t*>(const_cast<char*>(name.data())),
          reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())),
          name.size(), value.size(),
          NGHTTP2_NV_FLAG_NO_COPY_NAME | NGHTTP2_NV_FLAG_NO_COPY_VALUE};
}

void H2Call::Next() {
  if (finishing_) return;
  asked_ = true;
  conn_->Deliver(this);
}

void H2Call::Send(std::shared_ptr<const std::string> message) {
  if (finishing_) return;
  Piece piece;
  WriteMessagePrefix(false, static_cast<uint32_t>(message->size()),
                     piece.prefix);
  piece.body = std::move(message);
  queued_ += piece.size();
  if (out_.empty()) waiting_since_ = conn_->now_;
  out_.push_back(std::move(piece));
  if (!headers_sent_) {
    conn_->SubmitHeaders(this);
  } else {
    conn_->Resume(this);
  }
}

void H2Call::Finish(
    int code, absl::string_view message,
    const std::vector<std::pair<std::string, std::string>>& trailers) {
  if (finishing_) return;
  finishing_ = true;
  if (waiting_since_ == absl::InfiniteFuture()) waiting_since_ = conn_->now_;
  trailer_text_.clear();
  trailer_text_.push_back(std::to_string(code));
  trailer_text_.push_back(PercentEncode(message));
  for (const auto& [name, value] : trailers) {
    trailer_text_.push_back(name);
    trailer_text_.push_back(value);
  }
  trailer_nv_.clear();
  if (!headers_sent_) {
    // Trailers-Only: the status fields in the response's one HEADERS.
    trailer_nv_.push_back(NoCopyField(":status", "200"));
    trailer_nv_.push_back(NoCopyField("content-type", "application/grpc"));
  }
  trailer_nv_.push_back(NoCopyField("grpc-status", trailer_text_[0]));
  if (!message.empty()) {
    trailer_nv_.push_back(NoCopyField("grpc-message", trailer_text_[1]));
  }
  for (size_t i = 2; i + 1 < trailer_text_.size(); i += 2) {
    trailer_nv_.push_back(NoCopyField(trailer_text_[i], trailer_text_[i + 1]));
  }
  if (!headers_sent_) {
    headers_sent_ = true;
    nghttp2_submit_response(conn_->session_, id_, trailer_nv_.data(),
                            trailer_nv_.size(), nullptr);
  } else {
    conn_->Resume(this);
  }
}

void H2Call::Reset() {
  finishing_ = true;
  nghttp2_submit_rst_stream(conn_->session_, NGHTTP2_FLAG_NONE, id_,
                            NGHTTP2_CANCEL);
}

void H2Call::Take(size_t n, std::string* out) {
  while (n > 0) {
    Piece& piece = out_.front();
    if (piece.done < kMessagePrefixBytes) {
      const size_t k = std::min(n, kMessagePrefixBytes - piece.done);
      out->append(piece.prefix + piece.done, k);
      piece.done += k;
      n -= k;
      queued_ -= k;
      continue;
    }
    const size_t at = piece.done - kMessagePrefixBytes;
    const size_t k = std::min(n, piece.body->size() - at);
    out->append(piece.body->data() + at, k);
    piece.done += k;
    n -= k;
    queued_ -= k;
    if (piece.done == piece.size()) out_.pop_front();
  }
  waiting_since_ = out_.empty() && !finishing_ ? absl::InfiniteFuture()
                                               : conn_->now_;
}

}  // namespace metasrv::server
