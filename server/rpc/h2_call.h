// One gRPC call on an HTTP/2 connection (h2_connection.h): its request
// HEADERS, its messages asked for one at a time, its answers queued as shared
// byte pieces, its status sent once; and the interfaces its owner and the
// port's dispatcher implement.
//
// Thread safety: none. A call belongs to its connection's loop thread.
#ifndef METASRV_SERVER_RPC_H2_CALL_H_
#define METASRV_SERVER_RPC_H2_CALL_H_

#include <nghttp2/nghttp2.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "server/rpc/grpc_frames.h"
#include "server/rpc/host_shares.h"
#include "server/rpc/peer_address.h"
#include "server/rpc/request_decoding.h"
#include "server/rpc/shared_bytes.h"

namespace metasrv::server {

class H2Connection;
class H2Loop;

// A header field that nghttp2 sends without copying: `name` and `value`
// must outlive the frame.
nghttp2_nv NoCopyField(absl::string_view name, absl::string_view value);

// Why the transport refused a call itself.
enum class TransportRefusal {
  kNone,
  kRequestBytes,  // Request bytes held past H2Limits::max_held_requests.
  kHeaderList,    // Its header list past SETTINGS_MAX_HEADER_LIST_SIZE.
  kMessageSize,   // A message past H2Limits::max_message_bytes.
  kMalformed,     // Not gRPC, a broken grpc-timeout or message, an
                  // encoding not supported.
  kExpired,       // Its grpc-timeout had passed when it came (0n).
};

// A request's HEADERS as gRPC uses them.
struct RequestHead {
  std::string method;                     // ":method".
  std::string path;                       // ":path": "/package.Service/Method".
  std::string content_type;               // "content-type".
  std::string te;                         // "te".
  std::string encoding;                   // "grpc-encoding"; empty: identity.
  std::string accept_encoding;            // "grpc-accept-encoding".
  Compression compression = Compression::kNone;  // What `encoding` names.
  std::string authorization;              // "authorization".
  std::optional<absl::Duration> timeout;  // "grpc-timeout", parsed.
  bool bad_timeout = false;               // One that does not parse.
  size_t bytes = 0;  // The list's size as SETTINGS counts it.
  int fields = 0;    // Fields in its header blocks.
  // Set when the transport refused the call at its HEADERS (answered
  // with `refused`; the sink is told through OnRefused, not OnCall).
  TransportRefusal refusal = TransportRefusal::kNone;
  absl::Status refused;
};

class H2Call;

// What a call tells its owner; on the loop thread, never re-entered.
class CallEvents {
 public:
  virtual ~CallEvents() = default;
  // A request message, asked for by H2Call::Next(), and how it is
  // compressed: its flag and RequestHead::compression decide (a flag
  // without an encoding ends the call before it gets here).
  virtual void OnMessage(H2Call* call, Compression compression,
                         std::string message) = 0;
  // Asked for by Next(): the client sent its last message.
  virtual void OnHalfClose(H2Call* call) = 0;
  // Everything Send() queued has gone to the socket's buffer.
  virtual void OnDrained(H2Call* /*call*/) {}
  // The call's deadline (set_deadline) passed. By default it finishes
  // DEADLINE_EXCEEDED.
  virtual void OnDeadline(H2Call* call);
  // The stream is gone (finished and sent, reset by either side, the
  // connection lost); the call is deleted when this returns.
  virtual void OnClosed(H2Call* call) = 0;
};

// Takes each call at its request HEADERS.
class CallSink {
 public:
  virtual ~CallSink() = default;
  // A call came on a connection from `peer`: set its events, or Finish() it
  // at once.
  virtual void OnCall(H2Call* call, const PeerAddress& peer) = 0;
  // The transport ends `call` itself for `why` with `status`: at its
  // HEADERS (head().refusal is set then, and OnCall never comes), at a
  // header block past the limits (reset, not answered), or after OnCall (a
  // bound on request bytes, a message too long or broken).
  virtual void OnRefused(H2Call* /*call*/, TransportRefusal /*why*/,
                         const absl::Status& /*status*/) {}
  // nghttp2 cut the connection from `peer` (a GOAWAY with an error): a
  // flood of resets, a header block that never ends, a protocol error.
  virtual void OnConnectionCut(const PeerAddress& /*peer*/) {}
  // The oldest connection of `host` was closed to make room for a new one
  // (the transport's connection share).
  virtual void OnConnectionEvicted(const std::string& /*host*/) {}
  // A connection of `host` was closed as soon as accepted: its host over a
  // reset budget lately (`slowed`), or too many closes under way.
  virtual void OnConnectionRefused(const std::string& /*host*/,
                                   bool /*slowed*/) {}
};

// One stream: a gRPC call. Owned by its connection; its methods only on the
// loop thread, and none after OnClosed().
class H2Call {
 public:
  int32_t id() const { return id_; }
  const RequestHead& head() const { return head_; }
  void set_events(CallEvents* events) { events_ = events; }
  // Asks for the next message (or the end of the client's side).
  void Next();
  // Queues one message made of `pieces` (HEADERS first, once), flagged
  // compressed by `compression` when that is not kNone. A compressed
  // message must be the call's first: its grpc-encoding goes out in the
  // answer's HEADERS (one encoding for every message of a call).
  void Send(std::vector<SharedBytes> pieces,
            Compression compression = Compression::kNone);
  void Send(std::shared_ptr<const std::string> message) {
    Send(std::vector<SharedBytes>{SharedBytes::Of(std::move(message))});
  }
  // Ends the call with a status: trailers behind what is queued, or the
  // Trailers-Only answer if nothing was sent. `trailers` are extra fields.
  // Once; later calls do nothing.
  void Finish(
      int code, absl::string_view message,
      const std::vector<std::pair<std::string, std::string>>& trailers = {});
  // Drops what is queued and sends the status now, whatever the windows
  // (trailers are not flow-controlled): an answer that cannot be written
  // frees what it holds at once. Resets the stream if its status is on its
  // way already.
  void Abandon(int code, absl::string_view message);
  // Resets the stream (RST_STREAM CANCEL): nothing more is sent.
  void Reset();
  // Bytes queued and not yet taken by the socket buffer, and the answers
  // they belong to.
  size_t queued() const { return queued_; }
  size_t queued_answers() const { return out_.size(); }
  bool finished() const { return finishing_; }
  // The gRPC status code sent or on its way; -1 while none (or reset).
  int status_code() const { return status_code_; }
  // Whether it was reset because its answer could not be written within
  // the write stall limit (a client that does not read).
  bool stalled() const { return stalled_; }
  // The client's deadline (grpc-timeout); InfiniteFuture without one.
  absl::Time client_deadline() const { return client_deadline_; }
  // When OnDeadline() is called (the client's deadline until set).
  void set_deadline(absl::Time deadline) { deadline_ = deadline; }
  // The loop the call lives on: other threads reach it through Post().
  H2Loop* loop() const;
  // Its connection's descriptor (H2Loop::Touch()).
  int connection_fd() const;
  // Where its requests' inflation is charged (its host's share).
  InflateGate inflate_gate() const;

 private:
  friend class H2Connection;
  // One message queued: its prefix, then its pieces (shared).
  struct Piece {
    char prefix[kMessagePrefixBytes];
    size_t prefix_done = 0;  // Bytes of the prefix taken.
    std::vector<SharedBytes> parts;
    size_t part = 0;    // The part being taken,
    size_t offset = 0;  // and its bytes taken.
    size_t bytes = 0;   // Prefix and parts, in all.
  };
  H2Call(H2Connection* conn, int32_t id, size_t max_message)
      : conn_(conn), id_(id), assembler_(max_message) {}
  // Gives back what it counts in held_requests: the one give-back, however
  // the call ends (its stream closed, its connection dropped, shut down).
  ~H2Call() { ReleaseHeld(held_bytes_); }
  friend struct std::default_delete<H2Call>;
  // Copies `n` queued bytes to `out`.
  void Take(size_t n, std::string* out);
  // Makes the status fields (Trailers-Only while no HEADERS went).
  void SetStatus(
      int code, absl::string_view message,
      const std::vector<std::pair<std::string, std::string>>& trailers);

  H2Connection* const conn_;  // Its connection; owns it.
  const int32_t id_;          // The stream id.
  RequestHead head_;
  bool dispatched_ = false;        // Handed to the sink.
  CallEvents* events_ = nullptr;   // Set by the sink.
  MessageAssembler assembler_;     // Its request messages.
  std::deque<std::string> inbox_;  // Messages not asked for yet,
  std::deque<bool> inbox_flags_;   // with their compressed flags.
  // The HTTP status of a Trailers-Only answer: 415 for a request that is
  // not gRPC's content-type.
  const char* http_status_ = "200";
  // The answer's grpc-encoding, set by its first Send (kNone: none sent).
  Compression answer_encoding_ = Compression::kNone;
  size_t unconsumed_ = 0;          // DATA bytes held back from the window.
  size_t held_bytes_ = 0;          // Counted in H2Limits::held_requests.
  // Gives back up to `bytes` of what it counts in held_requests.
  void ReleaseHeld(size_t bytes);
  bool asked_ = false;        // Next() is waiting for a message.
  bool half_closed_ = false;  // The client's END_STREAM came.
  bool end_told_ = false;     // OnHalfClose() was called.
  bool headers_sent_ = false;
  bool finishing_ = false;      // Finish() was called.
  bool trailers_sent_ = false;  // Its status was submitted.
  bool deferred_ = false;       // nghttp2 waits for data (resume to send).
  std::vector<nghttp2_nv> trailer_nv_;  // Point into trailer_text_.
  std::vector<std::string> trailer_text_;
  std::deque<Piece> out_;  // Queued messages.
  size_t queued_ = 0;      // Their bytes not taken yet.
  // When the answer at the front (or the status, once nothing is queued)
  // must have left: set when it comes to the front, never moved by the
  // bytes a trickled window lets out (H2Limits::WriteTime).
  absl::Time write_deadline_ = absl::InfiniteFuture();
  absl::Time client_deadline_ = absl::InfiniteFuture();  // grpc-timeout.
  absl::Time deadline_ = absl::InfiniteFuture();         // OnDeadline() is due.
  bool stalled_ = false;  // Reset for a write past its stall limit.
  int status_code_ = -1;  // What SetStatus() made.
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_RPC_H2_CALL_H_
