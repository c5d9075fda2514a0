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

void CallEvents::OnDeadline(H2Call* call) {
  call->Finish(4, "deadline exceeded");  // DEADLINE_EXCEEDED.
}

H2Loop* H2Call::loop() const { return conn_->loop_; }

int H2Call::connection_fd() const { return conn_->fd(); }

InflateGate H2Call::inflate_gate() const {
  return {conn_->limits_.inflation, &conn_->peer_.host};
}

void H2Call::ReleaseHeld(size_t bytes) {
  bytes = std::min(bytes, held_bytes_);
  if (bytes == 0) return;
  held_bytes_ -= bytes;
  conn_->limits_.held_requests->Give(conn_->peer_.host, static_cast<int64_t>(bytes));
}

void H2Call::Send(std::vector<SharedBytes> pieces, Compression compression) {
  if (finishing_) return;
  if (!headers_sent_) answer_encoding_ = compression;
  if (compression != answer_encoding_) return;  // Broken contract: dropped.
  size_t length = 0;
  for (const SharedBytes& p : pieces) length += p.bytes.size();
  Piece piece;
  WriteMessagePrefix(compression != Compression::kNone,
                     static_cast<uint32_t>(length), piece.prefix);
  piece.parts = std::move(pieces);
  piece.bytes = kMessagePrefixBytes + length;
  queued_ += piece.bytes;
  if (out_.empty()) {
    write_deadline_ = conn_->now_ + conn_->limits_.WriteTime(piece.bytes);
  }
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
  if (write_deadline_ == absl::InfiniteFuture()) {
    write_deadline_ = conn_->now_ + conn_->limits_.WriteTime(0);
  }
  SetStatus(code, message, trailers);
  if (!headers_sent_) {
    headers_sent_ = true;
    trailers_sent_ = true;
    nghttp2_submit_response(conn_->session_, id_, trailer_nv_.data(),
                            trailer_nv_.size(), nullptr);
  } else {
    conn_->Resume(this);
  }
}

void H2Call::Abandon(int code, absl::string_view message) {
  if (trailers_sent_) {
    Reset();  // Its status is on its way already: nothing more to say.
    return;
  }
  out_.clear();
  queued_ = 0;
  finishing_ = true;
  write_deadline_ = absl::InfiniteFuture();
  SetStatus(code, message, {});
  trailers_sent_ = true;
  if (!headers_sent_) {
    headers_sent_ = true;
    nghttp2_submit_response(conn_->session_, id_, trailer_nv_.data(),
                            trailer_nv_.size(), nullptr);
  } else {
    // Not flow-controlled: it goes whatever the windows; the data source
    // stays deferred until the stream closes.
    nghttp2_submit_trailer(conn_->session_, id_, trailer_nv_.data(),
                           trailer_nv_.size());
  }
}

void H2Call::SetStatus(
    int code, absl::string_view message,
    const std::vector<std::pair<std::string, std::string>>& trailers) {
  status_code_ = code;
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
    trailer_nv_.push_back(NoCopyField(":status", http_status_));
    trailer_nv_.push_back(NoCopyField("content-type", "application/grpc"));
    trailer_nv_.push_back(
        NoCopyField("grpc-accept-encoding", kAcceptEncoding));
  }
  trailer_nv_.push_back(NoCopyField("grpc-status", trailer_text_[0]));
  if (!message.empty()) {
    trailer_nv_.push_back(NoCopyField("grpc-message", trailer_text_[1]));
  }
  for (size_t i = 2; i + 1 < trailer_text_.size(); i += 2) {
    trailer_nv_.push_back(NoCopyField(trailer_text_[i], trailer_text_[i + 1]));
  }
}

void H2Call::Reset() {
  finishing_ = true;
  nghttp2_submit_rst_stream(conn_->session_, NGHTTP2_FLAG_NONE, id_,
                            NGHTTP2_CANCEL);
}

void H2Call::Take(size_t n, std::string* out) {
  queued_ -= n;
  while (n > 0) {
    Piece& piece = out_.front();
    if (piece.prefix_done < kMessagePrefixBytes) {
      const size_t k = std::min(n, kMessagePrefixBytes - piece.prefix_done);
      out->append(piece.prefix + piece.prefix_done, k);
      piece.prefix_done += k;
      n -= k;
    }
    while (n > 0 && piece.part < piece.parts.size()) {
      const absl::string_view bytes = piece.parts[piece.part].bytes;
      const size_t k = std::min(n, bytes.size() - piece.offset);
      out->append(bytes.data() + piece.offset, k);
      piece.offset += k;
      n -= k;
      if (piece.offset == bytes.size()) {
        ++piece.part;
        piece.offset = 0;
      }
    }
    if (piece.prefix_done == kMessagePrefixBytes &&
        piece.part == piece.parts.size()) {
      out_.pop_front();
      // The next answer's time starts now; a part of one taken does not
      // move its deadline.
      write_deadline_ =
          out_.empty() ? absl::InfiniteFuture()
                       : conn_->now_ + conn_->limits_.WriteTime(
                                           out_.front().bytes);
    }
  }
  if (out_.empty()) {
    if (finishing_) write_deadline_ = conn_->now_ + conn_->limits_.WriteTime(0);
    conn_->drained_.push_back(id_);
  }
}

}  // namespace metasrv::server
