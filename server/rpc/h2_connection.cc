#include "server/rpc/h2_connection.h"

#include <errno.h>
#include <openssl/err.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "server/rpc/answer_encoding.h"

namespace metasrv::server {
namespace {

constexpr int kH2Resource = 8;   // RESOURCE_EXHAUSTED.
constexpr int kH2Deadline = 4;  // DEADLINE_EXCEEDED.

H2Connection* ConnectionOf(void* user_data) {
  return static_cast<H2Connection*>(user_data);
}

}  // namespace

nghttp2_session_callbacks* H2Connection::Callbacks() {
  static nghttp2_session_callbacks* const callbacks = [] {
    nghttp2_session_callbacks* cb = nullptr;
    nghttp2_session_callbacks_new(&cb);
    nghttp2_session_callbacks_set_send_callback(cb, &SendCb);
    nghttp2_session_callbacks_set_send_data_callback(cb, &SendDataCb);
    nghttp2_session_callbacks_set_on_begin_headers_callback(cb,
                                                            &BeginHeadersCb);
    nghttp2_session_callbacks_set_on_header_callback(cb, &HeaderCb);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, &FrameRecvCb);
    nghttp2_session_callbacks_set_on_frame_send_callback(cb, &FrameSendCb);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, &DataChunkCb);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, &StreamCloseCb);
    return cb;
  }();
  return callbacks;
}

H2Connection::H2Connection(int fd, PeerAddress peer, const H2Limits& limits,
                           CallSink* sink, H2Loop* loop, absl::Time now,
                           SslContext tls)
    : fd_(fd),
      peer_(std::move(peer)),
      limits_(limits),
      sink_(sink),
      loop_(loop),
      opened_(now),
      idle_since_(now),
      now_(now) {
  if (tls != nullptr) {
    tls_context_ = std::move(tls);
    ssl_ = H2Tls::NewSession(tls_context_.get(), fd_);
  }
  nghttp2_option* option = nullptr;
  nghttp2_option_new(&option);
  nghttp2_option_set_no_auto_window_update(option, 1);
  nghttp2_option_set_stream_reset_rate_limit(option, limits.reset_burst(),
                                             limits.reset_rate());
  nghttp2_option_set_max_continuations(option, limits.max_continuations);
  nghttp2_session_server_new2(&session_, Callbacks(), this, option);
  nghttp2_option_del(option);
  const nghttp2_settings_entry settings[] = {
      {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS,
       static_cast<uint32_t>(limits.max_concurrent_streams)},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, limits.stream_window},
      {NGHTTP2_SETTINGS_MAX_FRAME_SIZE, limits.max_frame_bytes},
      {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, limits.max_header_list_bytes},
  };
  nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings,
                          sizeof(settings) / sizeof(settings[0]));
  nghttp2_session_set_local_window_size(session_, NGHTTP2_FLAG_NONE, 0,
                                        limits.connection_window);
}

H2Connection::~H2Connection() {
  // Calls first, while their connection is whole.
  auto calls = std::move(calls_);
  calls_.clear();
  for (auto& [id, call] : calls) {
    if (call->events_ != nullptr) call->events_->OnClosed(call.get());
  }
  calls.clear();
  nghttp2_session_del(session_);
  if (ssl_ != nullptr) SSL_free(ssl_);
  close(fd_);
}

H2Call* H2Connection::Find(int32_t id) {
  auto it = calls_.find(id);
  return it == calls_.end() ? nullptr : it->second.get();
}

bool H2Connection::OnReadable(absl::Time now) {
  now_ = now;
  char buf[16384];
  for (int reads = 0;; ++reads) {
    // A few reads per event; TLS bytes OpenSSL already holds are not seen
    // by epoll, so they are read whatever the count.
    if (reads >= 16 && (ssl_ == nullptr || SSL_pending(ssl_) == 0)) break;
    const ssize_t n = ReadSome(buf, sizeof(buf));
    if (n == 0 || n == -2) return false;
    if (n == -1) break;
    last_read_ = now;
    const ssize_t fed = nghttp2_session_mem_recv(
        session_, reinterpret_cast<const uint8_t*>(buf), n);
    if (fed < 0 || broken_) return false;
    // What nghttp2 answered goes first: a GOAWAY for a flood it cut ends
    // the reading here, not after the next reads.
    if (nghttp2_session_want_write(session_) &&
        nghttp2_session_send(session_) != 0) {
      return false;
    }
    if (!nghttp2_session_want_read(session_)) break;
    if (ssl_ == nullptr && static_cast<size_t>(n) < sizeof(buf)) break;
  }
  return Flush(now);
}

bool H2Connection::OnWritable(absl::Time now) {
  // A TLS read that waited for the socket to take bytes goes on too.
  if (ssl_ != nullptr && tls_wants_write_ && !OnReadable(now)) return false;
  return Flush(now);
}

bool H2Connection::Flush(absl::Time now) {
  now_ = now;
  // As long as the socket takes all, nghttp2 is asked for more; what does
  // not fit waits for EPOLLOUT.
  do {
    if (nghttp2_session_send(session_) != 0 || broken_) return false;
    if (!WriteOut(now)) return false;
    // Told outside nghttp2's callbacks: they may queue more.
    while (!drained_.empty()) {
      std::vector<int32_t> drained;
      drained.swap(drained_);
      for (int32_t id : drained) {
        H2Call* call = Find(id);
        if (call != nullptr && call->events_ != nullptr && !call->finishing_) {
          call->events_->OnDrained(call);
        }
      }
    }
  } while (!wants_write() && nghttp2_session_want_write(session_));
  if (!nghttp2_session_want_read(session_) &&
      !nghttp2_session_want_write(session_) && !wants_write()) {
    return false;  // Both sides are done (GOAWAY sent and drained).
  }
  return true;
}

bool H2Connection::WriteOut(absl::Time now) {
  while (out_done_ < out_.size()) {
    const ssize_t n =
        WriteSome(out_.data() + out_done_, out_.size() - out_done_);
    if (n == -2 || n == 0) return false;
    if (n == -1) break;
    out_done_ += static_cast<size_t>(n);
    out_progress_ += static_cast<size_t>(n);
  }
  if (out_done_ < out_.size() &&
      (out_waiting_since_ == absl::InfiniteFuture() ||
       out_progress_ >= kSocketProgress)) {
    out_waiting_since_ = now;
    out_progress_ = 0;
  }
  if (out_done_ == out_.size()) {
    out_.clear();
    out_done_ = 0;
    out_waiting_since_ = absl::InfiniteFuture();
  } else if (out_done_ > (64 << 10)) {
    out_.erase(0, out_done_);
    out_done_ = 0;
  }
  return true;
}

ssize_t H2Connection::TlsResult(int result) {
  if (result > 0) return result;
  switch (SSL_get_error(ssl_, result)) {
    case SSL_ERROR_WANT_READ:
      return -1;
    case SSL_ERROR_WANT_WRITE:
      tls_wants_write_ = true;
      return -1;
    case SSL_ERROR_ZERO_RETURN:
      return 0;
    default:
      ERR_clear_error();
      return -2;
  }
}

ssize_t H2Connection::ReadSome(char* buf, size_t size) {
  if (ssl_ != nullptr) {
    tls_wants_write_ = false;
    return TlsResult(SSL_read(ssl_, buf, static_cast<int>(size)));
  }
  for (;;) {
    const ssize_t n = read(fd_, buf, size);
    if (n >= 0) return n;
    if (errno == EINTR) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK ? -1 : -2;
  }
}

ssize_t H2Connection::WriteSome(const char* data, size_t size) {
  if (ssl_ != nullptr) {
    tls_wants_write_ = false;
    const ssize_t n = TlsResult(SSL_write(ssl_, data, static_cast<int>(size)));
    return n == 0 ? -2 : n;
  }
  for (;;) {
    const ssize_t n = send(fd_, data, size, MSG_NOSIGNAL);
    if (n >= 0) return n;
    if (errno == EINTR) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK ? -1 : -2;
  }
}

bool H2Connection::Tick(absl::Time now) {
  now_ = now;
  if (!preface_seen_ && now - opened_ > limits_.preface_limit) return false;
  if (wants_write() && now - out_waiting_since_ >
                           limits_.WriteTime(limits_.socket_buffer_bytes)) {
    return false;  // The socket took too little for the whole limit.
  }
  bool changed = false;
  if (calls_.empty() && now - idle_since_ > limits_.idle_limit &&
      !goaway_final_) {
    // Idle: a GOAWAY first (closed once it went), so that a call racing
    // the close is refused by it and retried by its client, not failed.
    goaway_final_ = true;
    nghttp2_session_terminate_session(session_, NGHTTP2_NO_ERROR);
    changed = true;
  }
  if (ping_outstanding_ && now - ping_sent_ > limits_.keepalive_timeout) {
    return false;  // The peer is gone.
  }
  // A PING once the peer sent nothing for keepalive_time (nor did our
  // last PING go out within it): a connection in use is never pinged.
  if (preface_seen_ && !ping_outstanding_ &&
      now - std::max(last_read_, ping_sent_) > limits_.keepalive_time) {
    static constexpr uint8_t kKeepalive[8] = {'k', 'e', 'e', 'p',
                                              'a', 'l', 'i', 'v'};
    nghttp2_submit_ping(session_, NGHTTP2_FLAG_NONE, kKeepalive);
    ping_sent_ = now;
    ping_outstanding_ = true;
    changed = true;
  }
  std::vector<H2Call*> late;
  for (auto& [id, call] : calls_) {
    if (now > call->write_deadline_) {
      call->stalled_ = true;
      // Its answer could not be written: it ends here, and says why.
      call->Abandon(kH2Resource,
                    "the answer was not read within --reply_stall_limit");
      call->write_deadline_ = absl::InfiniteFuture();
      changed = true;
    } else if (!call->finishing_ && now > call->deadline_) {
      late.push_back(call.get());
    }
  }
  for (H2Call* call : late) {
    call->deadline_ = absl::InfiniteFuture();
    if (call->events_ != nullptr) {
      call->events_->OnDeadline(call);
    } else {
      call->Finish(kH2Deadline, "deadline exceeded");
    }
  }
  const bool paid = PayOwed();
  return changed || !late.empty() || paid ? Flush(now) : true;
}

bool H2Connection::PayOwed() {
  HostBudget* budget = limits_.held_requests;
  if (budget == nullptr || budget->Owed(peer_.host) == 0) return false;
  std::vector<H2Call*> holding;
  for (auto& [id, call] : calls_) {
    if (call->held_bytes_ > 0 && !call->finishing_) holding.push_back(call.get());
  }
  std::sort(holding.begin(), holding.end(), [](H2Call* a, H2Call* b) {
    return a->held_bytes_ > b->held_bytes_;
  });
  bool paid = false;
  for (H2Call* call : holding) {
    if (budget->Owed(peer_.host) == 0) break;
    Refuse(call, TransportRefusal::kRequestBytes,
           absl::ResourceExhaustedError(
               "ended to make room for another client host: this host held "
               "more than its share of the server's bound on requests not "
               "yet whole (--grpc_memory_limit); retry later"));
    call->ReleaseHeld(call->held_bytes_);
    paid = true;
  }
  return paid;
}

void H2Connection::Shutdown() {
  if (shutting_down_) return;
  shutting_down_ = true;
  nghttp2_submit_shutdown_notice(session_);
  uint8_t payload[8] = {'s', 'h', 'u', 't', 'd', 'o', 'w', 'n'};
  nghttp2_submit_ping(session_, NGHTTP2_FLAG_NONE, payload);
}

void H2Connection::SubmitHeaders(H2Call* call) {
  call->headers_sent_ = true;
  nghttp2_nv nva[] = {NoCopyField(":status", "200"),
                      NoCopyField("content-type", "application/grpc"),
                      NoCopyField("grpc-accept-encoding", kAcceptEncoding),
                      NoCopyField("grpc-encoding",
                                  EncodingName(call->answer_encoding_))};
  const size_t fields = call->answer_encoding_ == Compression::kNone ? 3 : 4;
  nghttp2_data_provider provider;
  provider.source.ptr = call;
  provider.read_callback = &ReadDataCb;
  nghttp2_submit_response(session_, call->id_, nva, fields, &provider);
}

void H2Connection::Resume(H2Call* call) {
  if (call->deferred_) {
    call->deferred_ = false;
    nghttp2_session_resume_data(session_, call->id_);
  }
}

void H2Connection::Dispatch(H2Call* call) {
  call->dispatched_ = true;
  RequestHead& head = call->head_;
  auto refuse = [&head](TransportRefusal why, absl::Status status) {
    head.refusal = why;
    head.refused = std::move(status);
  };
  const std::optional<Compression> compression =
      CompressionNamed(head.encoding);
  if (!absl::StartsWith(head.content_type, "application/grpc")) {
    // gRPC's answer to another HTTP/2 client: 415, so that it does not
    // take the 200 of a gRPC status for a success.
    call->http_status_ = "415";
    refuse(TransportRefusal::kMalformed,
           absl::InternalError("not a gRPC request: content-type " +
                               head.content_type));
  } else if (head.method != "POST") {
    refuse(TransportRefusal::kMalformed,
           absl::InternalError("not a gRPC request: method " + head.method));
  } else if (head.bad_timeout) {
    refuse(TransportRefusal::kMalformed,
           absl::InternalError("grpc-timeout does not parse"));
  } else if (!compression.has_value()) {
    refuse(TransportRefusal::kMalformed,
           absl::UnimplementedError(absl::StrCat(
               "grpc-encoding ", head.encoding,
               " is not supported; this server accepts ", kAcceptEncoding)));
  } else if (head.timeout.has_value() &&
             *head.timeout <= absl::ZeroDuration()) {
    refuse(TransportRefusal::kExpired,
           absl::DeadlineExceededError("deadline exceeded"));
  } else if (head.timeout.has_value()) {
    call->client_deadline_ = now_ + *head.timeout;
    call->deadline_ = call->client_deadline_;
  }
  head.compression = compression.value_or(Compression::kNone);
  if (head.refusal != TransportRefusal::kNone) {
    Refuse(call, head.refusal, head.refused);
  } else {
    sink_->OnCall(call, peer_);
  }
}

void H2Connection::Refuse(H2Call* call, TransportRefusal why,
                          const absl::Status& status) {
  sink_->OnRefused(call, why, status);
  call->Finish(static_cast<int>(status.code()), status.message());
}

bool H2Connection::CountReset(HostResets* budget) {
  if (budget == nullptr || budget->Take(peer_.host, now_)) {
    return true;
  }
  if (!cut_) {
    cut_ = true;  // Closed once the GOAWAY went (Flush: both sides done).
    nghttp2_session_terminate_session(session_, NGHTTP2_ENHANCE_YOUR_CALM);
    sink_->OnConnectionCut(peer_);
  }
  return false;
}

void H2Connection::Deliver(H2Call* call) {
  if (!call->asked_ || call->events_ == nullptr) return;
  if (!call->inbox_.empty()) {
    std::string message = std::move(call->inbox_.front());
    const bool compressed = call->inbox_flags_.front();
    if (compressed && call->head_.compression == Compression::kNone) {
      // gRPC: a compressed message on a call without an encoding (once: the
      // client's end may ask again).
      if (!call->finishing_) {
        Refuse(call, TransportRefusal::kMalformed,
               absl::InternalError("a message has the compressed flag and "
                                   "the call no grpc-encoding"));
      }
      return;
    }
    call->inbox_.pop_front();
    call->inbox_flags_.pop_front();
    call->ReleaseHeld(message.size() + kMessagePrefixBytes);
    call->asked_ = false;
    if (call->inbox_.empty() && call->unconsumed_ > 0) {
      nghttp2_session_consume(session_, call->id_, call->unconsumed_);
      call->unconsumed_ = 0;
    }
    call->events_->OnMessage(
        call, compressed ? call->head_.compression : Compression::kNone,
        std::move(message));
  } else if (call->half_closed_ && !call->end_told_) {
    call->end_told_ = true;
    call->asked_ = false;
    if (call->assembler_.mid_message()) {
      Refuse(call, TransportRefusal::kMalformed,
             absl::InternalError(
                 "the request ended in the middle of a message"));
      return;
    }
    call->events_->OnHalfClose(call);
  }
}

ssize_t H2Connection::SendCb(nghttp2_session*, const uint8_t* data,
                             size_t length, int, void* user_data) {
  H2Connection* conn = ConnectionOf(user_data);
  if (conn->out_.size() - conn->out_done_ >=
      conn->limits_.socket_buffer_bytes) {
    return NGHTTP2_ERR_WOULDBLOCK;
  }
  conn->out_.append(reinterpret_cast<const char*>(data), length);
  return static_cast<ssize_t>(length);
}

int H2Connection::SendDataCb(nghttp2_session*, nghttp2_frame* frame,
                             const uint8_t* framehd, size_t length,
                             nghttp2_data_source* source, void* user_data) {
  H2Connection* conn = ConnectionOf(user_data);
  if (conn->out_.size() - conn->out_done_ >=
      conn->limits_.socket_buffer_bytes) {
    return NGHTTP2_ERR_WOULDBLOCK;
  }
  auto* call = static_cast<H2Call*>(source->ptr);
  conn->out_.append(reinterpret_cast<const char*>(framehd), 9);
  call->Take(length, &conn->out_);
  (void)frame;  // No padding is ever asked for.
  return 0;
}

ssize_t H2Connection::ReadDataCb(nghttp2_session* session, int32_t id, uint8_t*,
                                 size_t length, uint32_t* flags,
                                 nghttp2_data_source* source, void* user_data) {
  auto* call = static_cast<H2Call*>(source->ptr);
  if (call->trailers_sent_) {
    call->deferred_ = true;  // Abandoned: its status went by itself.
    return NGHTTP2_ERR_DEFERRED;
  }
  const size_t n = std::min(length, call->queued_);
  if (n == 0 && !call->finishing_) {
    call->deferred_ = true;
    return NGHTTP2_ERR_DEFERRED;
  }
  if (n > 0) *flags |= NGHTTP2_DATA_FLAG_NO_COPY;
  if (call->finishing_ && n == call->queued_) {
    *flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
    call->trailers_sent_ = true;
    nghttp2_submit_trailer(session, id, call->trailer_nv_.data(),
                           call->trailer_nv_.size());
  }
  (void)user_data;
  return static_cast<ssize_t>(n);
}

int H2Connection::BeginHeadersCb(nghttp2_session*, const nghttp2_frame* frame,
                                 void* user_data) {
  H2Connection* conn = ConnectionOf(user_data);
  if (frame->hd.type != NGHTTP2_HEADERS ||
      frame->headers.cat != NGHTTP2_HCAT_REQUEST) {
    return 0;
  }
  const int32_t id = frame->hd.stream_id;
  conn->calls_[id].reset(new H2Call(conn, id, conn->limits_.max_message_bytes));
  return 0;
}

int H2Connection::HeaderCb(nghttp2_session*, const nghttp2_frame* frame,
                           const uint8_t* name_data, size_t name_len,
                           const uint8_t* value_data, size_t value_len, uint8_t,
                           void* user_data) {
  H2Connection* conn = ConnectionOf(user_data);
  H2Call* call = conn->Find(frame->hd.stream_id);
  if (call == nullptr) return 0;
  RequestHead& head = call->head_;
  // Every header block of the stream (its trailers too) is cut at the
  // limit: nghttp2 resets the stream and calls us no more for the block,
  // so a block that HPACK expands (one 4 kB table entry indexed by a byte,
  // thousands of times) costs what the limit allows, not what it expands
  // to. A connection that keeps sending such blocks is closed.
  head.bytes += name_len + value_len + 32;
  if (head.bytes > conn->limits_.max_header_list_bytes ||
      ++head.fields > H2Limits::kMaxHeaderFields) {
    conn->sink_->OnRefused(call, TransportRefusal::kHeaderList,
                           absl::ResourceExhaustedError(
                               "the request's header list is too long"));
    return ++conn->header_cuts_ > H2Limits::kMaxHeaderCuts
               ? NGHTTP2_ERR_CALLBACK_FAILURE
               : NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
  }
  if (call->dispatched_) return 0;  // Trailers: not kept.
  const absl::string_view name(reinterpret_cast<const char*>(name_data),
                               name_len);
  const absl::string_view value(reinterpret_cast<const char*>(value_data),
                                value_len);
  // The fields gRPC reads, each kept as it came.
  static constexpr std::pair<const char*, std::string RequestHead::*> kKept[] =
      {{":path", &RequestHead::path},
       {":method", &RequestHead::method},
       {"content-type", &RequestHead::content_type},
       {"te", &RequestHead::te},
       {"grpc-encoding", &RequestHead::encoding},
       {"grpc-accept-encoding", &RequestHead::accept_encoding},
       {"authorization", &RequestHead::authorization}};
  for (const auto& [field, member] : kKept) {
    if (name == field) {
      head.*member = std::string(value);
      return 0;
    }
  }
  if (name == "grpc-timeout") {
    head.timeout = ParseGrpcTimeout(value);
    head.bad_timeout = !head.timeout.has_value();
  }
  return 0;
}

int H2Connection::FrameRecvCb(nghttp2_session*, const nghttp2_frame* frame,
                              void* user_data) {
  H2Connection* conn = ConnectionOf(user_data);
  switch (frame->hd.type) {
    case NGHTTP2_SETTINGS:
      conn->preface_seen_ = true;
      return 0;
    case NGHTTP2_PING:
      if ((frame->hd.flags & NGHTTP2_FLAG_ACK) != 0) {
        conn->ping_outstanding_ = false;
      }
      if ((frame->hd.flags & NGHTTP2_FLAG_ACK) != 0 && conn->shutting_down_ &&
          !conn->goaway_final_) {
        conn->goaway_final_ = true;
        nghttp2_submit_goaway(
            conn->session_, NGHTTP2_FLAG_NONE,
            nghttp2_session_get_last_proc_stream_id(conn->session_),
            NGHTTP2_NO_ERROR, nullptr, 0);
      }
      return 0;
    case NGHTTP2_RST_STREAM: {
      // A reset of a call that was taken and not answered yet (Rapid
      // Reset: CVE-2023-44487) counts against the host, with the resets
      // the server makes; a cancel after the answer began (a watch, a
      // stream) is nghttp2's to bound, per connection.
      const H2Call* call = conn->Find(frame->hd.stream_id);
      if (call != nullptr && call->dispatched_ && !call->headers_sent_ &&
          !call->finishing_) {
        conn->CountReset(conn->limits_.early_resets);
      }
      return 0;
    }
    case NGHTTP2_HEADERS:
    case NGHTTP2_DATA:
      break;
    default:
      return 0;
  }
  H2Call* call = conn->Find(frame->hd.stream_id);
  if (call == nullptr) return 0;
  if (frame->hd.type == NGHTTP2_HEADERS && !call->dispatched_ &&
      (frame->hd.flags & NGHTTP2_FLAG_END_HEADERS) != 0) {
    conn->Dispatch(call);
    call = conn->Find(frame->hd.stream_id);
    if (call == nullptr) return 0;
  }
  if ((frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0) {
    call->half_closed_ = true;
    conn->Deliver(call);
  }
  return 0;
}

int H2Connection::FrameSendCb(nghttp2_session*, const nghttp2_frame* frame,
                              void* user_data) {
  H2Connection* conn = ConnectionOf(user_data);
  if (frame->hd.type == NGHTTP2_GOAWAY &&
      frame->goaway.error_code != NGHTTP2_NO_ERROR && !conn->cut_) {
    conn->sink_->OnConnectionCut(conn->peer_);  // nghttp2 cut a flood.
  }
  // A stream error nghttp2 answered with a reset (a client can make the
  // server reset as fast as it could reset itself: CVE-2025-8671, which
  // nghttp2 1.52 does not bound) counts against the client's host, over
  // all its connections.
  if (frame->hd.type == NGHTTP2_RST_STREAM &&
      frame->rst_stream.error_code != NGHTTP2_NO_ERROR &&
      frame->rst_stream.error_code != NGHTTP2_CANCEL) {
    conn->CountReset(conn->limits_.error_resets);
  }
  if (frame->hd.type != NGHTTP2_HEADERS ||
      (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) == 0) {
    return 0;
  }
  // The status went; a client still sending is told to stop.
  H2Call* call = conn->Find(frame->hd.stream_id);
  if (call != nullptr && !call->half_closed_) {
    nghttp2_submit_rst_stream(conn->session_, NGHTTP2_FLAG_NONE, call->id_,
                              NGHTTP2_NO_ERROR);
  }
  return 0;
}

int H2Connection::DataChunkCb(nghttp2_session*, uint8_t, int32_t id,
                              const uint8_t* data, size_t len,
                              void* user_data) {
  H2Connection* conn = ConnectionOf(user_data);
  H2Call* call = conn->Find(id);
  if (call == nullptr || call->finishing_ || call->events_ == nullptr) {
    nghttp2_session_consume(conn->session_, id, len);
    return 0;
  }
  if (HostBudget* held = conn->limits_.held_requests) {
    if (!held->Take(conn->peer_.host, static_cast<int64_t>(len))) {
      nghttp2_session_consume(conn->session_, id, len);
      conn->Refuse(call, TransportRefusal::kRequestBytes,
                   absl::ResourceExhaustedError(
                       "requests not yet whole exceed the server's bound "
                       "(--grpc_memory_limit) and this client's host holds "
                       "its share of it; retry later"));
      return 0;
    }
    call->held_bytes_ += len;
  }
  absl::Status fed = call->assembler_.Feed(
      absl::string_view(reinterpret_cast<const char*>(data), len),
      [call](bool compressed, std::string message) {
        call->inbox_.push_back(std::move(message));
        call->inbox_flags_.push_back(compressed);
      });
  if (!fed.ok()) {
    nghttp2_session_consume(conn->session_, id, len);
    conn->Refuse(call,
                 fed.code() == absl::StatusCode::kResourceExhausted
                     ? TransportRefusal::kMessageSize
                     : TransportRefusal::kMalformed,
                 fed);
    return 0;
  }
  // Held back from the window while messages wait to be asked for.
  if (call->inbox_.empty()) {
    nghttp2_session_consume(conn->session_, id, len);
  } else {
    call->unconsumed_ += len;
  }
  conn->Deliver(call);
  return 0;
}

int H2Connection::StreamCloseCb(nghttp2_session*, int32_t id, uint32_t,
                                void* user_data) {
  H2Connection* conn = ConnectionOf(user_data);
  auto it = conn->calls_.find(id);
  if (it == conn->calls_.end()) return 0;
  std::unique_ptr<H2Call> call = std::move(it->second);
  conn->calls_.erase(it);
  if (call->unconsumed_ > 0) {
    nghttp2_session_consume_connection(conn->session_, call->unconsumed_);
  }
  if (conn->calls_.empty()) conn->idle_since_ = conn->now_;
  if (call->events_ != nullptr) call->events_->OnClosed(call.get());
  return 0;
}

}  // namespace metasrv::server
