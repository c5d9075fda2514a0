// One HTTP/2 connection of the gRPC port, spoken through nghttp2 (Debian's
// security team keeps it: its reset-rate limit and CONTINUATION bound are
// on), with gRPC's framing (grpc_frames.h) on each stream. A stream is an
// H2Call handed to the CallSink at its request HEADERS, before anything is
// queued for it.
//
// Every write has a deadline: a call whose answer has not left within
// `H2Limits::write_stall_limit` is reset and closed, whatever the windows,
// and a connection whose bytes the socket has not taken for as long is
// closed. A connection must send its preface within `preface_limit`, and
// one with no open call is closed after `idle_limit`.
//
// Thread safety: none. A connection, its calls and the events it calls
// belong to one loop thread (h2_loop.h).
#ifndef METASRV_SERVER_RPC_H2_CONNECTION_H_
#define METASRV_SERVER_RPC_H2_CONNECTION_H_

#include <nghttp2/nghttp2.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "server/rpc/grpc_frames.h"

namespace metasrv::server {

// What every connection of the port is held to.
struct H2Limits {
  uint32_t max_concurrent_streams = 1000;  // SETTINGS, per connection.
  uint32_t stream_window = 1 << 20;        // SETTINGS_INITIAL_WINDOW_SIZE.
  uint32_t connection_window = 4 << 20;    // The connection's window.
  uint32_t max_frame_bytes = 16384;        // SETTINGS_MAX_FRAME_SIZE.
  uint32_t max_header_list_bytes = 16384;  // SETTINGS_MAX_HEADER_LIST_SIZE.
  size_t max_message_bytes = 4 << 20;      // A request message, at most.
  uint64_t reset_burst = 1000;  // nghttp2's RST_STREAM bucket: its size,
  uint64_t reset_rate = 33;     // and tokens a second; then GOAWAY.
  size_t max_continuations = 8;  // CONTINUATION frames after HEADERS.
  absl::Duration write_stall_limit = absl::Seconds(10);
  absl::Duration preface_limit = absl::Seconds(10);
  absl::Duration idle_limit = absl::Minutes(5);
  // Bytes made ready for the socket before nghttp2 is asked for more.
  size_t socket_buffer_bytes = 256 << 10;
};

// A request's HEADERS as gRPC uses them.
struct RequestHead {
  std::string method;         // ":method".
  std::string path;           // ":path": "/package.Service/Method".
  std::string content_type;   // "content-type".
  std::string te;             // "te".
  std::string encoding;       // "grpc-encoding"; empty: identity.
  std::string authorization;  // "authorization".
  std::optional<absl::Duration> timeout;  // "grpc-timeout", parsed.
  bool bad_timeout = false;               // One that does not parse.
  size_t bytes = 0;  // The list's size as SETTINGS counts it.
};

class H2Call;

// What a call tells its owner; on the loop thread, never re-entered.
class CallEvents {
 public:
  virtual ~CallEvents() = default;
  // A request message, asked for by H2Call::Next(). `compressed` is its
  // flag (the encoding is RequestHead::encoding).
  virtual void OnMessage(H2Call* call, bool compressed,
                         std::string message) = 0;
  // Asked for by Next(): the client sent its last message.
  virtual void OnHalfClose(H2Call* call) = 0;
  // The stream is gone (finished and sent, reset by either side, the
  // connection lost); the call is deleted when this returns.
  virtual void OnClosed(H2Call* call) = 0;
};

// Takes each call at its request HEADERS.
class CallSink {
 public:
  virtual ~CallSink() = default;
  // A call came on a connection from `peer` (the socket's address, exact):
  // set its events, or Finish() it at once.
  virtual void OnCall(H2Call* call, const std::string& peer) = 0;
};

class H2Connection;

// One stream: a gRPC call. Owned by its connection; its methods only on the
// loop thread, and none after OnClosed().
class H2Call {
 public:
  int32_t id() const { return id_; }
  const RequestHead& head() const { return head_; }
  void set_events(CallEvents* events) { events_ = events; }
  // Asks for the next message (or the end of the client's side).
  void Next();
  // Queues `message` (HEADERS first, once).
  void Send(std::shared_ptr<const std::string> message);
  // Ends the call with a status: trailers behind what is queued, or the
  // Trailers-Only answer if nothing was sent. `trailers` are extra fields.
  // Once; later calls do nothing.
  void Finish(int code, absl::string_view message,
              const std::vector<std::pair<std::string, std::string>>&
                  trailers = {});
  // Resets the stream (RST_STREAM CANCEL): nothing more is sent.
  void Reset();
  // Bytes queued and not yet taken by the socket buffer.
  size_t queued() const { return queued_; }
  bool finished() const { return finishing_; }

 private:
  friend class H2Connection;
  // One message queued: its prefix, then its bytes (shared).
  struct Piece {
    char prefix[kMessagePrefixBytes];
    std::shared_ptr<const std::string> body;
    size_t done = 0;  // Bytes of prefix and body taken.
    size_t size() const { return kMessagePrefixBytes + body->size(); }
  };
  H2Call(H2Connection* conn, int32_t id, size_t max_message)
      : conn_(conn), id_(id), assembler_(max_message) {}
  // Copies `n` queued bytes to `out`.
  void Take(size_t n, std::string* out);

  H2Connection* const conn_;  // Its connection; owns it.
  const int32_t id_;          // The stream id.
  RequestHead head_;
  bool header_overflow_ = false;  // Its header list was too long.
  bool dispatched_ = false;       // Handed to the sink.
  CallEvents* events_ = nullptr;  // Set by the sink.
  MessageAssembler assembler_;    // Its request messages.
  std::deque<std::string> inbox_;  // Messages not asked for yet,
  std::deque<bool> inbox_flags_;   // with their compressed flags.
  size_t unconsumed_ = 0;  // DATA bytes held back from the window.
  bool asked_ = false;     // Next() is waiting for a message.
  bool half_closed_ = false;  // The client's END_STREAM came.
  bool end_told_ = false;     // OnHalfClose() was called.
  bool headers_sent_ = false;
  bool finishing_ = false;  // Finish() was called.
  bool deferred_ = false;   // nghttp2 waits for data (resume to send).
  std::vector<nghttp2_nv> trailer_nv_;  // Point into trailer_text_.
  std::vector<std::string> trailer_text_;
  std::deque<Piece> out_;         // Queued messages.
  size_t queued_ = 0;             // Their bytes not taken yet.
  absl::Time waiting_since_ = absl::InfiniteFuture();  // Oldest unsent.
  absl::Time deadline_ = absl::InfiniteFuture();       // From grpc-timeout.
};

class H2Connection {
 public:
  // Takes `fd` (non-blocking; closed with the connection).
  H2Connection(int fd, std::string peer, const H2Limits& limits,
               CallSink* sink, absl::Time now);
  ~H2Connection();  // Closes every call (OnClosed), then the socket.
  H2Connection(const H2Connection&) = delete;
  H2Connection& operator=(const H2Connection&) = delete;

  int fd() const { return fd_; }
  const std::string& peer() const { return peer_; }
  absl::Time opened() const { return opened_; }

  // The socket is readable / writable. False: close the connection.
  bool OnReadable(absl::Time now);
  bool OnWritable(absl::Time now);
  // Sends what calls queued. False: close the connection.
  bool Flush(absl::Time now);
  // Whether bytes wait for the socket (poll it for writing).
  bool wants_write() const { return out_.size() > out_done_; }
  // Deadlines: stalled answers, calls past their timeout, the preface, an
  // idle connection, a socket that takes nothing. False: close it.
  bool Tick(absl::Time now);
  // Begins a graceful end: GOAWAY with the last id 2^31-1 and a PING; the
  // real GOAWAY follows the PING's answer. Calls open go on.
  void Shutdown();
  int open_calls() const { return static_cast<int>(calls_.size()); }

 private:
  friend class H2Call;
  static nghttp2_session_callbacks* Callbacks();
  // nghttp2's callbacks (user_data is the connection).
  static ssize_t SendCb(nghttp2_session*, const uint8_t*, size_t, int, void*);
  static int SendDataCb(nghttp2_session*, nghttp2_frame*, const uint8_t*,
                        size_t, nghttp2_data_source*, void*);
  static ssize_t ReadDataCb(nghttp2_session*, int32_t, uint8_t*, size_t,
                            uint32_t*, nghttp2_data_source*, void*);
  static int BeginHeadersCb(nghttp2_session*, const nghttp2_frame*, void*);
  static int HeaderCb(nghttp2_session*, const nghttp2_frame*, const uint8_t*,
                      size_t, const uint8_t*, size_t, uint8_t, void*);
  static int FrameRecvCb(nghttp2_session*, const nghttp2_frame*, void*);
  static int FrameSendCb(nghttp2_session*, const nghttp2_frame*, void*);
  static int DataChunkCb(nghttp2_session*, uint8_t, int32_t, const uint8_t*,
                         size_t, void*);
  static int StreamCloseCb(nghttp2_session*, int32_t, uint32_t, void*);

  H2Call* Find(int32_t id);
  // The request's HEADERS are whole: checks them and hands the call over.
  void Dispatch(H2Call* call);
  // Gives the client's end or the next message to a call that asked.
  void Deliver(H2Call* call);
  // Sends the response HEADERS (with a data source) or Trailers-Only.
  void SubmitHeaders(H2Call* call);
  void Resume(H2Call* call);
  // Ends the call's stream with a status before it was handed over.
  void Refuse(H2Call* call, int code, absl::string_view message);
  // Writes out_ to the socket; false on an error.
  bool WriteOut(absl::Time now);

  const int fd_;
  const std::string peer_;
  const H2Limits limits_;
  CallSink* const sink_;
  const absl::Time opened_;
  nghttp2_session* session_ = nullptr;  // Owned.
  absl::flat_hash_map<int32_t, std::unique_ptr<H2Call>> calls_;
  std::string out_;       // Bytes for the socket,
  size_t out_done_ = 0;   // of which these were written.
  absl::Time out_waiting_since_ = absl::InfiniteFuture();
  bool preface_seen_ = false;  // The client's SETTINGS came.
  absl::Time idle_since_;      // No call open since.
  bool shutting_down_ = false;
  bool goaway_final_ = false;  // The real GOAWAY was submitted.
  bool broken_ = false;        // A callback failed the session.
  absl::Time now_;             // Of the event being handled.
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_RPC_H2_CONNECTION_H_
