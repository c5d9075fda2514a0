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

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "server/rpc/h2_call.h"
#include "server/rpc/h2_tls.h"
#include "server/rpc/host_shares.h"

namespace metasrv::server {

// What every connection of the port is held to.
// Those that are settings are each one row of the settings table
// (config/settings.cc), with the default declared here: ServerOptions holds
// the transport's options whole. The door's deadlines also bound the
// transport (write_stall_limit, preface_limit: MetasrvServer::Serve).
struct H2Limits {
  // SETTINGS_MAX_CONCURRENT_STREAMS (--max_streams_per_connection).
  int max_concurrent_streams = 1000;
  uint32_t stream_window = 1 << 20;        // SETTINGS_INITIAL_WINDOW_SIZE.
  uint32_t connection_window = 4 << 20;    // The connection's window.
  uint32_t max_frame_bytes = 16384;        // SETTINGS_MAX_FRAME_SIZE.
  uint32_t max_header_list_bytes = 16384;  // SETTINGS_MAX_HEADER_LIST_SIZE.
  // A request message, at most, also once inflated (--max_message_bytes).
  int max_message_bytes = 4 << 20;
  // RST_STREAM frames one connection may send in a burst, and then each
  // second, before nghttp2 closes it (a rapid reset; --max_early_resets);
  // 0: nghttp2's bucket, 1,000 and then 33 a second.
  int max_early_resets = 2000;
  uint64_t reset_burst() const {
    return max_early_resets > 0 ? static_cast<uint64_t>(max_early_resets) : 1000;
  }
  uint64_t reset_rate() const {
    return max_early_resets > 0 ? static_cast<uint64_t>(max_early_resets) : 33;
  }
  size_t max_continuations = 8;  // CONTINUATION frames after HEADERS.
  // Fields in one stream's header blocks, at most (beside the bytes of
  // max_header_list_bytes); past either, the stream is reset at once.
  static constexpr int kMaxHeaderFields = 256;
  // Header blocks cut at those limits on one connection before it is
  // closed (GOAWAY).
  static constexpr int kMaxHeaderCuts = 4;
  // An answer must have left within the stall limit plus its size at
  // kMinWriteRate from when it could start (WriteTime), however its
  // client's window trickles; the socket must take bytes at that rate too.
  absl::Duration write_stall_limit = absl::Seconds(5);
  static constexpr double kMinWriteRate = 1 << 20;  // Bytes a second.
  absl::Duration WriteTime(size_t bytes) const {
    return write_stall_limit + absl::Seconds(bytes / kMinWriteRate);
  }
  absl::Duration preface_limit = absl::Seconds(10);
  absl::Duration idle_limit = absl::Minutes(5);
  // A PING after this long without bytes from the peer
  // (--keepalive_time); no answer within the timeout (--keepalive_timeout)
  // closes the connection (a peer gone without a FIN).
  absl::Duration keepalive_time = absl::Seconds(30);
  absl::Duration keepalive_timeout = absl::Seconds(10);
  // Request bytes the transport holds before their messages are whole or
  // asked for, over every connection (--grpc_memory_limit; 0: no bound),
  // shared by host (`held_requests`, the transport's HostBudget): a call
  // whose bytes its host may not take ends RESOURCE_EXHAUSTED.
  uint64_t max_held_requests = 512 << 20;
  HostBudget* held_requests = nullptr;
  // Resets counted by host (the transport's; null: none counted): the
  // client's of calls taken and not answered yet (Rapid Reset), and those
  // the server makes for stream errors (a protocol error: an honest client
  // makes none). A host over either budget has its connection closed.
  HostResets* early_resets = nullptr;
  HostResets* error_resets = nullptr;
  // What compressed requests inflate to, shared by host (the transport's;
  // null: not bounded): RawRequest charges it.
  HostInflation* inflation = nullptr;
  // Bytes made ready for the socket before nghttp2 is asked for more.
  size_t socket_buffer_bytes = 256 << 10;
};

class H2Connection {
 public:
  // Takes `fd` (non-blocking; closed with the connection).
  // With `tls` (null: plaintext), the connection is TLS: the handshake
  // comes first, within the preface limit.
  // `peer` is the client's address, taken at accept.
  H2Connection(int fd, PeerAddress peer, const H2Limits& limits,
               CallSink* sink, H2Loop* loop, absl::Time now,
               SslContext tls = nullptr);
  ~H2Connection();  // Closes every call (OnClosed), then the socket.
  H2Connection(const H2Connection&) = delete;
  H2Connection& operator=(const H2Connection&) = delete;

  int fd() const { return fd_; }
  const PeerAddress& peer() const { return peer_; }
  absl::Time opened() const { return opened_; }

  // The socket is readable / writable. False: close the connection.
  bool OnReadable(absl::Time now);
  bool OnWritable(absl::Time now);
  // Sends what calls queued. False: close the connection.
  bool Flush(absl::Time now);
  // Whether bytes wait for the socket (poll it for writing).
  bool wants_write() const {
    return out_.size() > out_done_ || tls_wants_write_;
  }
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
  // Ends a dispatched call for `why` with `status`, telling the sink.
  void Refuse(H2Call* call, TransportRefusal why, const absl::Status& status);
  // Ends this connection's calls holding request bytes, the most first,
  // while its host owes bytes back (HostBudget::Owed); whether it ended
  // any.
  bool PayOwed();
  // One reset of the host in `budget`: false once the host is over it (the
  // session is being ended).
  bool CountReset(HostResets* budget);
  // Sends the response HEADERS (with a data source) or Trailers-Only.
  void SubmitHeaders(H2Call* call);
  void Resume(H2Call* call);
  // Writes out_ to the socket; false on an error.
  bool WriteOut(absl::Time now);
  // The socket's bytes, through TLS if it is on: > 0 bytes, 0 the peer
  // closed, -1 nothing now (EAGAIN), -2 an error.
  ssize_t ReadSome(char* buf, size_t size);
  ssize_t WriteSome(const char* data, size_t size);
  // Maps an OpenSSL result to ReadSome()'s; notes a TLS read or write that
  // waits for the socket's other direction.
  ssize_t TlsResult(int result);

  const int fd_;
  const PeerAddress peer_;  // Its shares are counted under peer_.host.
  const H2Limits limits_;
  CallSink* const sink_;
  H2Loop* const loop_;  // Its loop (H2Call::loop()); may be null in tests.
  const absl::Time opened_;
  std::vector<int32_t> drained_;  // Calls whose answers all left.
  nghttp2_session* session_ = nullptr;  // Owned.
  SslContext tls_context_;              // Kept while ssl_ lives.
  SSL* ssl_ = nullptr;                  // Owned; null: plaintext.
  bool tls_wants_write_ = false;  // OpenSSL waits for the socket to take.
  absl::flat_hash_map<int32_t, std::unique_ptr<H2Call>> calls_;
  std::string out_;       // Bytes for the socket,
  size_t out_done_ = 0;   // of which these were written.
  // Since when out_ waits for the socket, restarted only by a write of
  // kSocketProgress bytes or more (or out_ emptied): a peer that takes a
  // byte at a time does not hold it open.
  absl::Time out_waiting_since_ = absl::InfiniteFuture();
  size_t out_progress_ = 0;  // Bytes written since it was set.
  static constexpr size_t kSocketProgress = 16 << 10;
  bool preface_seen_ = false;  // The client's SETTINGS came.
  absl::Time ping_sent_ = absl::InfinitePast();  // Our last keepalive.
  absl::Time last_read_ = absl::InfinitePast();  // Bytes came from the peer.
  bool ping_outstanding_ = false;                // Its answer is due.
  absl::Time idle_since_;      // No call open since.
  bool shutting_down_ = false;
  bool goaway_final_ = false;  // The real GOAWAY was submitted.
  bool broken_ = false;        // A callback failed the session.
  int header_cuts_ = 0;        // Header blocks cut at the limits.
  bool cut_ = false;           // Over its host's reset budget: ending.
  absl::Time now_;             // Of the event being handled.
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_RPC_H2_CONNECTION_H_
