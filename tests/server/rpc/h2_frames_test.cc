// The nghttp2 transport against frames written by hand: a zero window, a
// long header list, a reset mid-message, GOAWAY with a call open,
// CONTINUATION and reset floods, and the port's bounds (connections shared
// between hosts, the preface's deadline, idle connections).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <nghttp2/nghttp2.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/clock.h"
#include "tests/server/rpc/h2_fixture.h"

namespace metasrv::server {
namespace {

constexpr uint8_t kData = 0, kHeaders = 1, kRst = 3, kSettings = 4,
                  kPing = 6, kGoaway = 7, kContinuation = 9;
constexpr uint8_t kEndStream = 1, kAck = 1, kEndHeaders = 4;

struct Frame {
  uint8_t type = 0, flags = 0;
  uint32_t stream = 0;
  std::string payload;
};

std::string Be32(uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16),
          static_cast<char>(v >> 8), static_cast<char>(v)};
}

std::string FrameBytes(uint8_t type, uint8_t flags, uint32_t stream,
                       const std::string& payload) {
  return Be32(static_cast<uint32_t>(payload.size())).substr(1) +
         std::string{static_cast<char>(type), static_cast<char>(flags)} +
         Be32(stream) + payload;
}

// HPACK: an integer with an N-bit prefix; a literal field, not indexed.
std::string HpackInt(size_t v, int bits) {
  const size_t max = (size_t{1} << bits) - 1;
  if (v < max) return std::string(1, static_cast<char>(v));
  std::string out(1, static_cast<char>(max));
  for (v -= max; v >= 128; v >>= 7) out.push_back(static_cast<char>(v % 128 + 128));
  out.push_back(static_cast<char>(v));
  return out;
}
std::string Literal(const std::string& name, const std::string& value) {
  return std::string(1, '\0') + HpackInt(name.size(), 7) + name +
         HpackInt(value.size(), 7) + value;
}
std::string Request(const std::string& path) {
  return Literal(":method", "POST") + Literal(":scheme", "http") +
         Literal(":path", path) + Literal(":authority", "test") +
         Literal("content-type", "application/grpc") +
         Literal("te", "trailers");
}
std::string Message(const std::string& bytes) {
  std::string prefix(kMessagePrefixBytes, '\0');
  WriteMessagePrefix(false, static_cast<uint32_t>(bytes.size()), prefix.data());
  return prefix + bytes;
}

// A client that writes frames itself. It acknowledges the server's
// SETTINGS; everything else the test does.
class RawClient {
 public:
  RawClient(int port, const char* source, const std::string& settings = "",
            bool preface = true) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in from{};
    from.sin_family = AF_INET;
    inet_pton(AF_INET, source, &from.sin_addr);
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&from), sizeof(from)), 0);
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(static_cast<uint16_t>(port));
    inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
    EXPECT_EQ(connect(fd_, reinterpret_cast<sockaddr*>(&to), sizeof(to)), 0);
    if (preface) {
      Send("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" +
           FrameBytes(kSettings, 0, 0, settings));
    }
    nghttp2_hd_inflate_new(&inflater_);
  }
  ~RawClient() {
    nghttp2_hd_inflate_del(inflater_);
    close(fd_);
  }
  // Sends what the server takes before it closes the connection (a flood).
  void SendUntilClosed(const std::string& bytes) {
    size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = send(fd_, bytes.data() + done, bytes.size() - done,
                             MSG_NOSIGNAL);
      if (n <= 0) return;
      done += static_cast<size_t>(n);
    }
  }
  void Send(const std::string& bytes) {
    ASSERT_EQ(send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(bytes.size()));
  }
  // The next frame; nullopt at EOF (closed() then) or after `limit`.
  std::optional<Frame> Read(absl::Duration limit = absl::Seconds(10)) {
    const absl::Time deadline = absl::Now() + limit;
    while (in_.size() < 9 || in_.size() < 9 + Length()) {
      pollfd p{fd_, POLLIN, 0};
      const int wait = static_cast<int>(
          std::max<int64_t>(0, absl::ToInt64Milliseconds(deadline - absl::Now())));
      if (poll(&p, 1, wait) <= 0) return std::nullopt;
      char buf[65536];
      const ssize_t n = recv(fd_, buf, sizeof(buf), 0);
      if (n <= 0) {
        closed_ = true;
        return std::nullopt;
      }
      in_.append(buf, n);
    }
    Frame f;
    const size_t length = Length();
    f.type = in_[3];
    f.flags = in_[4];
    f.stream = (static_cast<uint32_t>(static_cast<uint8_t>(in_[5])) << 24 |
                static_cast<uint8_t>(in_[6]) << 16 |
                static_cast<uint8_t>(in_[7]) << 8 |
                static_cast<uint8_t>(in_[8])) & 0x7fffffff;
    f.payload = in_.substr(9, length);
    in_.erase(0, 9 + length);
    if (f.type == kSettings && (f.flags & kAck) == 0) {
      SendUntilClosed(FrameBytes(kSettings, kAck, 0, ""));
    }
    return f;
  }
  // Frames until one `matches`; nullopt if none came.
  template <typename Pred>
  std::optional<Frame> ReadUntil(Pred matches,
                                 absl::Duration limit = absl::Seconds(10)) {
    const absl::Time deadline = absl::Now() + limit;
    while (absl::Now() < deadline) {
      std::optional<Frame> f = Read(deadline - absl::Now());
      if (!f.has_value()) return std::nullopt;
      if (matches(*f)) return f;
    }
    return std::nullopt;
  }
  // Whether the server closes the connection within `limit`.
  bool ClosedWithin(absl::Duration limit) {
    const absl::Time deadline = absl::Now() + limit;
    while (!closed_ && absl::Now() < deadline) Read(deadline - absl::Now());
    return closed_;
  }
  // A HEADERS frame's fields (no padding or priority: the server sets none).
  std::vector<std::pair<std::string, std::string>> Fields(const Frame& f) {
    std::vector<std::pair<std::string, std::string>> out;
    auto* in = reinterpret_cast<const uint8_t*>(f.payload.data());
    size_t left = f.payload.size();
    for (;;) {
      nghttp2_nv nv;
      int flags = 0;
      const ssize_t used = nghttp2_hd_inflate_hd2(inflater_, &nv, &flags, in,
                                                  left, 1);
      if (used < 0) break;
      in += used;
      left -= used;
      if (flags & NGHTTP2_HD_INFLATE_EMIT) {
        out.emplace_back(std::string(reinterpret_cast<char*>(nv.name), nv.namelen),
                         std::string(reinterpret_cast<char*>(nv.value), nv.valuelen));
      }
      if (flags & NGHTTP2_HD_INFLATE_FINAL) {
        nghttp2_hd_inflate_end_headers(inflater_);
        break;
      }
      if (used == 0 && left == 0) break;
    }
    return out;
  }
  static std::string Field(
      const std::vector<std::pair<std::string, std::string>>& fields,
      const std::string& name) {
    for (const auto& [n, v] : fields) {
      if (n == name) return v;
    }
    return "";
  }

 private:
  size_t Length() const {
    return static_cast<uint8_t>(in_[0]) << 16 | static_cast<uint8_t>(in_[1]) << 8 |
           static_cast<uint8_t>(in_[2]);
  }
  int fd_ = -1;
  std::string in_;
  bool closed_ = false;
  nghttp2_hd_inflater* inflater_ = nullptr;
};

using H2FramesTest = H2TransportTest;

auto Is(uint8_t type, uint32_t stream) {
  return [type, stream](const Frame& f) {
    return f.type == type && f.stream == stream;
  };
}

// `client` gets a call on `stream` echoed.
void ExpectEcho(RawClient& client, int32_t stream, const std::string& text) {
  client.Send(FrameBytes(kHeaders, kEndHeaders, stream, Request("/t.T/Echo")) +
              FrameBytes(kData, kEndStream, stream, Message(text)));
  std::optional<Frame> data = client.ReadUntil(Is(kData, stream));
  ASSERT_TRUE(data.has_value()) << text;
  EXPECT_EQ(data->payload, Message(text));
}

// A new connection from `source` gets one call echoed.
void ExpectServed(int port, const char* source) {
  RawClient honest(port, source);
  ExpectEcho(honest, 1, "served");
}

TEST_F(H2FramesTest, AnAnswerStuckBehindAZeroWindowEndsAtTheStallLimit) {
  H2TransportOptions options;
  options.limits.write_stall_limit = absl::Milliseconds(300);
  Serve(options);
  // SETTINGS_INITIAL_WINDOW_SIZE = 0: no DATA can ever be sent.
  RawClient client(port(), "127.0.0.1", std::string("\x00\x04", 2) + Be32(0));
  client.Send(FrameBytes(kHeaders, kEndHeaders, 1, Request("/t.T/Big")) +
              FrameBytes(kData, kEndStream, 1, Message("x")));
  const absl::Time sent = absl::Now();
  // The status comes without the answer, whatever the window (HEADERS are
  // not flow-controlled): RESOURCE_EXHAUSTED.
  std::optional<Frame> status = client.ReadUntil([](const Frame& f) {
    return f.type == kHeaders && f.stream == 1 && (f.flags & kEndStream) != 0;
  });
  ASSERT_TRUE(status.has_value()) << "no status for the stuck answer";
  EXPECT_GE(absl::Now() - sent, absl::Milliseconds(250));
  EXPECT_EQ(RawClient::Field(client.Fields(*status), "grpc-status"), "8");
  EXPECT_TRUE(WaitFor([&] { return sink_.closed.load() == 1; }));
  // The connection is still served: a PING is answered.
  client.Send(FrameBytes(kPing, 0, 0, "12345678"));
  EXPECT_TRUE(client.ReadUntil(Is(kPing, 0)).has_value());
}

// Hardening round 7: a header list past the limit resets its stream at
// once (nghttp2 calls no more for the block), and the connection goes on.
TEST_F(H2FramesTest, AHeaderListTooLongResetsItsStreamAtOnce) {
  H2TransportOptions options;
  options.limits.max_header_list_bytes = 1024;
  Serve(options);
  RawClient client(port(), "127.0.0.1");
  client.Send(FrameBytes(
      kHeaders, kEndHeaders | kEndStream, 1,
      Request("/t.T/Echo") + Literal("x-pad", std::string(2000, 'p'))));
  std::optional<Frame> answer = client.ReadUntil(
      [](const Frame& f) { return f.type == kHeaders || f.type == kRst; });
  ASSERT_TRUE(answer.has_value());
  EXPECT_EQ(answer->type, kRst);
  EXPECT_EQ(answer->stream, 1u);
  EXPECT_EQ(sink_.calls.load(), 0);
  ExpectEcho(client, 3, "after");
}

// Hardening round 7's HPACK amplification: one 4 kB field put in the
// dynamic table, then header blocks that index it by one byte thousands of
// times (each would decode to megabytes). Each block is cut at the limit
// (field count or bytes), and the connection that keeps sending them is
// closed after H2Limits::kMaxHeaderCuts.
TEST_F(H2FramesTest, HeaderBlocksThatHpackExpandsAreCutAndTheSenderClosed) {
  Serve({});
  RawClient client(port(), "127.0.0.1");
  // Literal with incremental indexing, new name: dynamic index 62.
  const std::string value(4000, 'v');
  std::string entry = std::string(1, '\x40') + '\x05' + "x-big";
  entry += '\x7f';  // Value length 4000, 7-bit prefix integer.
  uint32_t rest = 4000 - 127;
  while (rest >= 128) {
    entry += static_cast<char>((rest % 128) | 0x80);
    rest /= 128;
  }
  entry += static_cast<char>(rest);
  entry += value;
  const std::string index(3000, '\xbe');  // Indexed: 0x80 | 62.
  int32_t stream = 1;
  for (int block = 0; block <= H2Limits::kMaxHeaderCuts;
       ++block, stream += 2) {
    client.SendUntilClosed(FrameBytes(
        kHeaders, kEndHeaders | kEndStream, stream,
        Request("/t.T/Echo") + (block == 0 ? entry : "") + index));
  }
  EXPECT_TRUE(client.ClosedWithin(absl::Seconds(10)));
  EXPECT_EQ(sink_.calls.load(), 0);
  ExpectServed(port(), "127.0.0.2");
}

// Hardening round 7: resets the server makes are counted too, per host.
// Trailers without END_STREAM after a whole request are a stream error
// nghttp2 answers with RST_STREAM (the "MadeYouReset" class; nghttp2 1.52
// bounds only the client's own resets, per connection). Across connections
// of one host the budget (twice nghttp2's bucket) runs out: the connection
// is closed and the host's next one closed at accept; another host is
// served.
TEST_F(H2FramesTest, ResetsTheServerMakesAreCountedPerHost) {
  Serve({});
  int closed = 0;
  int32_t sent = 0;
  for (int c = 0; c < 4 && closed == 0; ++c) {
    RawClient client(port(), "127.0.0.3");
    std::string burst;
    for (int32_t s = 1; s < 2 * 1000; s += 2) {
      burst += FrameBytes(kHeaders, kEndHeaders, s, Request("/t.T/Echo")) +
               FrameBytes(kData, 0, s, Message("x")) +
               FrameBytes(kHeaders, kEndHeaders, s, Literal("x-t", "1"));
      ++sent;
    }
    client.SendUntilClosed(burst);
    if (client.ClosedWithin(absl::Seconds(1))) ++closed;
  }
  EXPECT_EQ(closed, 1) << "after " << sent << " resets";
  EXPECT_LE(sent, 2000);  // 1,024 a host: cut on the second connection.
  RawClient again(port(), "127.0.0.3");
  EXPECT_TRUE(again.ClosedWithin(absl::Seconds(5)));
  ExpectServed(port(), "127.0.0.4");
}

// Rapid Reset from one host over fresh connections: calls taken and reset
// by the client before any answer count against the host across its
// connections, as the server's own resets do, so reconnecting refills
// nothing (nghttp2's bucket is per connection: 1,000 here).
TEST_F(H2FramesTest, ClientResetsOfUnansweredCallsAreCountedPerHost) {
  H2TransportOptions options;
  options.limits.max_early_resets = 0;  // nghttp2's bucket: 1,000, 33 a second.
  Serve(options);
  int closed = 0;
  int32_t sent = 0;
  for (int c = 0; c < 4 && closed == 0; ++c) {
    RawClient client(port(), "127.0.0.5");
    std::string burst;
    for (int32_t s = 1; s < 2 * 900; s += 2) {
      burst += FrameBytes(kHeaders, kEndHeaders, s, Request("/t.T/Echo")) +
               FrameBytes(kRst, 0, s, Be32(8));
      ++sent;
    }
    client.SendUntilClosed(burst);
    if (client.ClosedWithin(absl::Seconds(1))) ++closed;
  }
  EXPECT_EQ(closed, 1) << "after " << sent << " resets";
  EXPECT_LE(sent, 3600);
  RawClient again(port(), "127.0.0.5");
  EXPECT_TRUE(again.ClosedWithin(absl::Seconds(5)));
  ExpectServed(port(), "127.0.0.6");
}

// Another HTTP/2 client's request (not gRPC's content-type) is answered
// HTTP 415, so that it does not take the 200 of a gRPC status for success.
TEST_F(H2FramesTest, ARequestThatIsNotGrpcIsAnswered415) {
  Serve({});
  RawClient client(port(), "127.0.0.1");
  client.Send(FrameBytes(kHeaders, kEndHeaders, 1,
                         Literal(":method", "POST") +
                             Literal(":scheme", "http") +
                             Literal(":path", "/t.T/Echo") +
                             Literal(":authority", "test") +
                             Literal("content-type", "application/json")) +
              FrameBytes(kData, kEndStream, 1, "{}"));
  std::optional<Frame> answer = client.ReadUntil(Is(kHeaders, 1));
  ASSERT_TRUE(answer.has_value());
  const auto fields = client.Fields(*answer);
  EXPECT_EQ(RawClient::Field(fields, ":status"), "415");
  EXPECT_EQ(RawClient::Field(fields, "grpc-status"), "13");
  EXPECT_EQ(RawClient::Field(fields, "grpc-accept-encoding"),
            "identity,gzip,zstd");
  EXPECT_EQ(sink_.calls.load(), 0);
}

// The compressed flag without grpc-encoding ends the call INTERNAL on every
// shape (the transport decides, before the call's owner sees the message):
// here a stream, whose first plain message was echoed.
TEST_F(H2FramesTest, AFlaggedMessageWithoutAnEncodingEndsAnyCall) {
  Serve({});
  RawClient client(port(), "127.0.0.1");
  std::string flagged = Message("zz");
  flagged[0] = 1;
  client.Send(FrameBytes(kHeaders, kEndHeaders, 1, Request("/t.T/Echo")) +
              FrameBytes(kData, 0, 1, Message("plain")) +
              FrameBytes(kData, 0, 1, flagged));
  std::optional<Frame> head = client.ReadUntil(Is(kHeaders, 1));
  ASSERT_TRUE(head.has_value());
  EXPECT_EQ(RawClient::Field(client.Fields(*head), "grpc-accept-encoding"),
            "identity,gzip,zstd");
  std::optional<Frame> status = client.ReadUntil(Is(kHeaders, 1));
  ASSERT_TRUE(status.has_value());
  const auto fields = client.Fields(*status);
  EXPECT_EQ(RawClient::Field(fields, "grpc-status"), "13");
  EXPECT_NE(RawClient::Field(fields, "grpc-message").find("compressed flag"),
            std::string::npos);
  EXPECT_EQ(sink_.messages.load(), 1);
}

// gRPC answers a call whose grpc-timeout has already passed (0n)
// DEADLINE_EXCEEDED; it was served.
TEST_F(H2FramesTest, AnExpiredGrpcTimeoutIsDeadlineExceeded) {
  Serve({});
  RawClient client(port(), "127.0.0.1");
  client.Send(FrameBytes(kHeaders, kEndHeaders, 1,
                         Request("/t.T/Echo") + Literal("grpc-timeout", "0n")) +
              FrameBytes(kData, kEndStream, 1, Message("late")));
  std::optional<Frame> answer = client.ReadUntil(Is(kHeaders, 1));
  ASSERT_TRUE(answer.has_value());
  EXPECT_EQ(RawClient::Field(client.Fields(*answer), "grpc-status"), "4");
  EXPECT_EQ(sink_.calls.load(), 0);
}

TEST_F(H2FramesTest, AResetMidMessageCostsNothingAndTheConnectionGoesOn) {
  Serve({});
  RawClient client(port(), "127.0.0.1");
  const std::string half = Message(std::string(100, 'h')).substr(0, 15);
  client.Send(FrameBytes(kHeaders, kEndHeaders, 1, Request("/t.T/Echo")) +
              FrameBytes(kData, 0, 1, half) +
              FrameBytes(kRst, 0, 1, Be32(8)));
  ASSERT_TRUE(WaitFor([&] { return sink_.closed.load() == 1; }));
  EXPECT_EQ(sink_.messages.load(), 0);
  ExpectEcho(client, 3, "whole");
  std::optional<Frame> trailers = client.ReadUntil(Is(kHeaders, 3));
  ASSERT_TRUE(trailers.has_value());
  EXPECT_EQ(RawClient::Field(client.Fields(*trailers), "grpc-status"), "0");
}

TEST_F(H2FramesTest, GoawayComesInTwoPhasesAndOpenCallsFinish) {
  Serve({});
  RawClient client(port(), "127.0.0.1");
  client.Send(FrameBytes(kHeaders, kEndHeaders, 1, Request("/t.T/Echo")));
  ASSERT_TRUE(WaitFor([&] { return sink_.calls.load() == 1; }));
  transport_->Shutdown();
  // The notice (last id 2^31-1) and a PING, in either order.
  std::optional<Frame> first, ping;
  while (!first.has_value() || !ping.has_value()) {
    std::optional<Frame> f = client.Read();
    ASSERT_TRUE(f.has_value()) << "no GOAWAY notice and PING";
    if (f->type == kGoaway) first = f;
    if (f->type == kPing && (f->flags & kAck) == 0) ping = f;
  }
  EXPECT_EQ(first->payload.substr(0, 4), Be32(0x7fffffff));
  client.Send(FrameBytes(kPing, kAck, 0, ping->payload));
  std::optional<Frame> last = client.ReadUntil(Is(kGoaway, 0));
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ(last->payload.substr(0, 4), Be32(1));
  // The call open before it is still served.
  client.Send(FrameBytes(kData, kEndStream, 1, Message("late")));
  std::optional<Frame> data = client.ReadUntil(Is(kData, 1));
  ASSERT_TRUE(data.has_value());
  EXPECT_EQ(data->payload, Message("late"));
}

TEST_F(H2FramesTest, AContinuationFloodClosesTheConnection) {
  Serve({});
  RawClient client(port(), "127.0.0.1");
  std::string flood = FrameBytes(kHeaders, 0, 1, Request("/t.T/Echo"));
  for (int i = 0; i < 50; ++i) {
    flood += FrameBytes(kContinuation, 0, 1, Literal("x-c", "v"));
  }
  client.SendUntilClosed(flood);
  EXPECT_TRUE(client.ClosedWithin(absl::Seconds(10)));
  EXPECT_EQ(sink_.calls.load(), 0);
}

TEST_F(H2FramesTest, ARapidResetFloodIsCutAtNghttp2sRate) {
  H2TransportOptions options;
  options.limits.max_early_resets = 0;  // nghttp2's bucket: 1,000, 33 a second.
  Serve(options);
  RawClient client(port(), "127.0.0.1");
  std::string flood;
  for (uint32_t id = 1; id < 2 * 20000; id += 2) {
    flood += FrameBytes(kHeaders, kEndHeaders, id, Request("/t.T/Silent")) +
             FrameBytes(kRst, 0, id, Be32(8));
  }
  client.SendUntilClosed(flood);
  EXPECT_TRUE(client.ClosedWithin(absl::Seconds(10)));
  // nghttp2's bucket (1,000, then 33 a second) and the rest of the read
  // that emptied it (16 KiB, about 180 calls) bound it, not the flood's
  // 20,000.
  EXPECT_LE(sink_.calls.load(), 1200);
  EXPECT_TRUE(WaitFor([&] { return transport_->connections() == 0; }));
}

TEST_F(H2FramesTest, AtTheBoundTheHostHoldingTheMostGivesUpItsOldest) {
  H2TransportOptions options;
  options.max_connections = 6;
  Serve(options);
  std::vector<std::unique_ptr<RawClient>> flood;
  for (int i = 0; i < 6; ++i) {
    flood.push_back(std::make_unique<RawClient>(port(), "127.0.0.2"));
    ASSERT_TRUE(WaitFor([&] { return transport_->connections() == i + 1; }));
  }
  RawClient honest(port(), "127.0.0.1");
  EXPECT_TRUE(flood[0]->ClosedWithin(absl::Seconds(10)));
  EXPECT_EQ(transport_->evicted(), 1);
  honest.Send(FrameBytes(kHeaders, kEndHeaders, 1, Request("/t.T/Echo")) +
              FrameBytes(kData, kEndStream, 1, Message("mine")));
  std::optional<Frame> data = honest.ReadUntil(Is(kData, 1));
  ASSERT_TRUE(data.has_value());
  EXPECT_EQ(data->payload, Message("mine"));
  EXPECT_FALSE(flood[1]->ClosedWithin(absl::Milliseconds(100)));
}

TEST_F(H2FramesTest, NoPrefaceOrNoCallsWithinTheirLimitsClosesTheConnection) {
  H2TransportOptions options;
  options.limits.preface_limit = absl::Milliseconds(200);
  options.limits.idle_limit = absl::Milliseconds(400);
  Serve(options);
  RawClient silent(port(), "127.0.0.1", "", /*preface=*/false);
  EXPECT_TRUE(silent.ClosedWithin(absl::Seconds(10)));
  // An idle connection gets a GOAWAY (NO_ERROR) before it is closed, so
  // that a call racing the close is refused by it and retried.
  RawClient idle(port(), "127.0.0.1");
  std::optional<Frame> goaway = idle.ReadUntil(Is(kGoaway, 0));
  ASSERT_TRUE(goaway.has_value());
  EXPECT_EQ(goaway->payload.substr(4, 4), Be32(0));
  EXPECT_TRUE(idle.ClosedWithin(absl::Seconds(10)));
  EXPECT_TRUE(WaitFor([&] { return transport_->connections() == 0; }));
}

// Keepalive pings only a connection the peer sent nothing on for
// --keepalive_time: one in use (here a PING of its own every 50 ms, as
// GreptimeDB's heartbeat channel pings every 15 s) is never pinged.
TEST_F(H2FramesTest, OnlyAQuietConnectionIsPinged) {
  H2TransportOptions options;
  options.limits.keepalive_time = absl::Milliseconds(300);
  Serve(options);
  RawClient busy(port(), "127.0.0.1");
  RawClient quiet(port(), "127.0.0.1");
  const auto server_ping = [](const Frame& f) {
    return f.type == kPing && (f.flags & kAck) == 0;
  };
  const absl::Time end = absl::Now() + absl::Seconds(1);
  while (absl::Now() < end) {
    busy.Send(FrameBytes(kPing, 0, 0, "client!!"));
    EXPECT_FALSE(busy.ReadUntil(server_ping, absl::Milliseconds(50))
                     .has_value());
  }
  EXPECT_TRUE(quiet.ReadUntil(server_ping, absl::Seconds(1)).has_value());
}

TEST_F(H2FramesTest, APeerThatNeverAnswersKeepalivePingsIsClosed) {
  H2TransportOptions options;
  options.limits.keepalive_time = absl::Milliseconds(100);
  options.limits.keepalive_timeout = absl::Milliseconds(200);
  Serve(options);
  RawClient client(port(), "127.0.0.1");
  client.Send(FrameBytes(kHeaders, kEndHeaders, 1, Request("/t.T/Echo")));
  // A PING comes; it is never answered.
  ASSERT_TRUE(client.ReadUntil([](const Frame& f) {
                      return f.type == kPing && (f.flags & kAck) == 0;
                    }).has_value());
  EXPECT_TRUE(client.ClosedWithin(absl::Seconds(10)));
  EXPECT_TRUE(WaitFor([&] { return sink_.closed.load() == 1; }));
}

TEST_F(H2FramesTest, PartMessagesPastTheBoundEndTheirCallsNotOthers) {
  H2TransportOptions options;
  options.limits.max_held_requests = 1000;
  Serve(options);
  RawClient client(port(), "127.0.0.1");
  // A message announced as 1 MiB; 1,500 bytes of it sent, never the rest.
  const std::string part =
      Message(std::string(1 << 20, 'p')).substr(0, kMessagePrefixBytes + 1500);
  client.Send(FrameBytes(kHeaders, kEndHeaders, 1, Request("/t.T/Echo")) +
              FrameBytes(kData, 0, 1, part));
  std::optional<Frame> status = client.ReadUntil([](const Frame& f) {
    return f.type == kHeaders && f.stream == 1 && (f.flags & kEndStream) != 0;
  });
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(RawClient::Field(client.Fields(*status), "grpc-status"), "8");
  // What it held is free again: a whole message of 900 bytes is served.
  client.Send(FrameBytes(kHeaders, kEndHeaders, 3, Request("/t.T/Echo")) +
              FrameBytes(kData, kEndStream, 3, Message(std::string(900, 'w'))));
  std::optional<Frame> data = client.ReadUntil(Is(kData, 3));
  ASSERT_TRUE(data.has_value());
  EXPECT_EQ(data->payload, Message(std::string(900, 'w')));
}

}  // namespace
}  // namespace metasrv::server
