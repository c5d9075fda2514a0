"""A gRPC client that speaks exactly as GreptimeDB's meta client (tonic) does.

GreptimeDB's `configure_tonic_client!` (src/common/grpc/src/channel_manager.rs)
sets `.send_compressed(Zstd)`, `.accept_compressed(Gzip)` and
`.accept_compressed(Zstd)`: every request carries `grpc-encoding: zstd` and
each message is a zstd frame behind a gRPC message prefix whose compressed
flag is 1. This client writes those bytes itself over raw HTTP/2 (python3-h2),
with no gRPC library in between, and reads the answers as strictly as h2 does
(a header value with surrounding whitespace is a protocol error).
"""

import gzip
import socket
import struct

import h2.config
import h2.connection
import h2.events
import h2.settings
import zstandard


class CallError(Exception):
    """The call ended with a non-OK gRPC status."""

    def __init__(self, code, message, metadata=None):
        super().__init__(f"grpc-status {code}: {message}")
        self.code = code
        self.message = message
        # The trailers (or trailers-only headers): where GreptimeDB's error
        # metadata (x-greptime-err-*) travels.
        self.metadata = metadata or {}


def zstd_frame(payload, content_size=False):
    """A zstd frame of `payload`. tonic compresses through a streaming encoder,
    whose frames do not declare their content size; content_size=True makes
    the other kind."""
    if content_size:
        return zstandard.ZstdCompressor().compress(payload)
    cobj = zstandard.ZstdCompressor(write_content_size=False).compressobj()
    return cobj.compress(payload) + cobj.flush()


class Call:
    """One gRPC call (one HTTP/2 stream)."""

    def __init__(self, conn, stream_id):
        self.conn = conn
        self.stream_id = stream_id
        # What arrived and was not taken yet: a bytearray, which grows in
        # amortized constant time (bytes += would copy it all each time).
        self.buffer = bytearray()
        self.headers = None
        self.trailers = None
        self.ended = False
        self.reset_code = None
        self.flags = []  # Each answer message's compressed flag, in order,
        self.sizes = []  # and its bytes as they came (before inflating).

    def send(self, message, end=False, encoding=None, content_size=False):
        """Sends one serialized message, compressed as `encoding` (default:
        the connection's) says."""
        encoding = encoding or self.conn.encoding
        if encoding == "zstd":
            body, flag = zstd_frame(message, content_size), 1
        elif encoding == "gzip":
            body, flag = gzip.compress(message), 1
        else:
            body, flag = message, 0
        self.send_raw(struct.pack(">BI", flag, len(body)) + body, end)

    def send_raw(self, data, end=False):
        self.conn.send_data(self.stream_id, data, end)

    def cancel(self):
        """Resets the stream, as a client that gives up does."""
        self.conn.h2.reset_stream(self.stream_id, error_code=8)  # CANCEL
        self.conn.flush()
        self.ended = True
        self.reset_code = 8

    def close_send(self):
        self.conn.end_stream(self.stream_id)

    def _message(self):
        if len(self.buffer) < 5:
            return None
        flag, length = struct.unpack(">BI", self.buffer[:5])
        if len(self.buffer) < 5 + length:
            return None
        body = bytes(self.buffer[5:5 + length])
        del self.buffer[:5 + length]
        self.flags.append(flag)
        self.sizes.append(length)
        if flag:
            encoding = dict(self.headers or []).get("grpc-encoding", "identity")
            if encoding == "gzip":
                body = gzip.decompress(body)
            elif encoding == "zstd":
                body = zstandard.ZstdDecompressor().decompress(body)
            else:
                raise AssertionError(f"compressed answer with encoding {encoding}")
        return body

    def recv(self, timeout=10.0):
        """The next message, or None once the call ended OK. Raises CallError
        when it ended with an error status."""
        while True:
            msg = self._message()
            if msg is not None:
                return msg
            if self.ended:
                self.check_status()
                return None
            self.conn.pump(timeout)

    def check_status(self):
        # The status is in the trailers, or in the headers of a
        # trailers-only answer; a reset without either is code -2.
        trailers = dict(self.trailers or self.headers or [])
        if "grpc-status" not in trailers and self.reset_code is not None:
            raise CallError(-2, f"stream reset with {self.reset_code}")
        code = int(trailers.get("grpc-status", "-1"))
        if code != 0:
            raise CallError(code, trailers.get("grpc-message", ""), trailers)

    def finish(self, timeout=10.0):
        """Waits for the end of the call; returns the messages left unread."""
        left = []
        while True:
            msg = self.recv(timeout)
            if msg is None:
                return left
            left.append(msg)


class Connection:
    """One HTTP/2 connection, as tonic opens it (plaintext, prior knowledge)."""

    def __init__(self, addr, encoding="zstd", window=None, source=None,
                 timeout=10, accept="gzip,zstd,identity"):
        """`window`: the HTTP/2 initial stream window to announce (0: the
        server may send no answer's data until we grant some, which this
        client then never does). `source`: the loopback address to connect
        from (127.0.0.2, say), so that the server sees another host.
        `timeout`: seconds to wait for the connection. `accept`: the
        grpc-accept-encoding sent, by default tonic's for GreptimeDB's
        clients (gzip, then zstd, enabled in that order)."""
        host, port = addr.rsplit(":", 1)
        self.authority = addr
        self.encoding = encoding
        self.accept = accept
        self.sock = socket.create_connection(
            (host, int(port)), timeout=timeout,
            source_address=(source, 0) if source else None)
        # GreptimeDB's channels set TCP_NODELAY (ChannelConfig's default,
        # common/grpc/src/channel_manager.rs).
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        config = h2.config.H2Configuration(client_side=True,
                                           header_encoding="utf-8",
                                           validate_inbound_headers=True)
        self.h2 = h2.connection.H2Connection(config=config)
        self.grant = window is None
        if window is not None:
            self.h2.local_settings = h2.settings.Settings(
                client=True,
                initial_values={h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: window})
        self.h2.initiate_connection()
        self.flush()
        self.calls = {}

    def close(self):
        try:
            self.h2.close_connection()
            self.flush()
        finally:
            self.sock.close()

    def flush(self):
        data = self.h2.data_to_send()
        if data:
            self.sock.sendall(data)

    def open(self, path, metadata=()):
        """Starts a call of `path` with tonic's request headers, and
        `metadata` ((name, value) pairs) after them."""
        sid = self.h2.get_next_available_stream_id()
        headers = [(":method", "POST"), (":scheme", "http"), (":path", path),
                   (":authority", self.authority),
                   ("content-type", "application/grpc"),
                   ("user-agent", "tonic/0.12.3"), ("te", "trailers"),
                   ("grpc-accept-encoding", self.accept)]
        if self.encoding != "identity":
            headers.append(("grpc-encoding", self.encoding))
        headers.extend(metadata)
        self.h2.send_headers(sid, headers)
        self.flush()
        call = Call(self, sid)
        self.calls[sid] = call
        return call

    def send_data(self, sid, data, end):
        while data:
            window = min(self.h2.local_flow_control_window(sid),
                         self.h2.max_outbound_frame_size)
            if window <= 0:
                self.pump(10.0)
                continue
            chunk, data = data[:window], data[window:]
            self.h2.send_data(sid, chunk, end_stream=end and not data)
            self.flush()

    def end_stream(self, sid):
        self.h2.end_stream(sid)
        self.flush()

    def pump(self, timeout):
        """Reads from the socket once and dispatches the events."""
        self.sock.settimeout(timeout)
        data = self.sock.recv(65536)
        if not data:
            raise ConnectionError("server closed the connection")
        for event in self.h2.receive_data(data):
            call = self.calls.get(getattr(event, "stream_id", None))
            if isinstance(event, h2.events.ResponseReceived):
                call.headers = event.headers
            elif isinstance(event, h2.events.DataReceived):
                call.buffer += event.data
                if self.grant:
                    self.h2.acknowledge_received_data(event.flow_controlled_length,
                                                      event.stream_id)
            elif isinstance(event, h2.events.TrailersReceived):
                call.trailers = event.headers
            elif isinstance(event, h2.events.StreamEnded):
                call.ended = True
            elif isinstance(event, h2.events.StreamReset):
                # gRPC resets a stream it ended early, after its status.
                call.ended = True
                call.reset_code = event.error_code
        self.flush()

    def unary(self, path, request, metadata=(), **send_args):
        """Sends one request message and returns the one answer's bytes."""
        call = self.open(path, metadata)
        call.send(request.SerializeToString(), end=True, **send_args)
        answer = call.recv()
        call.finish()
        if answer is None:
            raise AssertionError(f"{path}: no answer")
        return answer
