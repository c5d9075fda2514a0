#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets (run from this folder)."""
import os


def varint(n):
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(num, wire, payload):
    tag = varint((num << 3) | wire)
    if wire == 0:
        return tag + varint(payload)
    return tag + varint(len(payload)) + payload


def header(role, member):
    return field(1, 2, field(3, 0, member) + field(4, 0, role))


def flow_stat(sizes, times):
    body = b""
    for k, v in sizes:
        body += field(1, 2, field(1, 0, k) + field(2, 0, v))
    for k, v in times:
        body += field(2, 2, field(1, 0, k) + field(2, 0, v))
    return field(9, 2, body)


def start_times(pairs):
    """extensions["flow_start_time_map"] = an encoded metasrv.v1.FlowStartTimes."""
    ext = b"".join(field(1, 2, field(1, 0, k) + field(2, 0, v)) for k, v in pairs)
    return field(99, 2, field(1, 2, b"flow_start_time_map") + field(2, 2, ext))


def peer_and_info(addr, hostname):
    return (field(2, 2, field(1, 0, 1) + field(2, 2, addr)) +
            field(8, 2, field(1, 2, b"0.12") + field(6, 2, hostname) + field(9, 0, 500)))


def step(req, op=1):
    return bytes([op]) + len(req).to_bytes(2, "little") + req


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


os.makedirs("corpus/heartbeat", exist_ok=True)
os.makedirs("corpus/json", exist_ok=True)
hs = header(2, 1)
write("corpus/heartbeat/handshake_then_report",
      step(hs) + step(hs + flow_stat([(1, 1024), (2, 2048)], [(1, 100), (2, 200)])))
write("corpus/heartbeat/two_nodes_shared_flow",
      step(header(2, 1) + flow_stat([(7, 10)], [(7, 5)])) +
      step(header(2, 2) + flow_stat([(7, 3)], [(7, 9)])) +
      step(header(2, 1) + flow_stat([(7, 1)], [(7, 1)])))
write("corpus/heartbeat/reset_between",
      step(header(2, 0) + flow_stat([(0, 1)], [(0, -5)])) + bytes([0]) +
      step(header(2, 0) + flow_stat([(4294967295, 2)], [])))
write("corpus/heartbeat/datanode_and_no_header",
      step(header(0, 3) + flow_stat([(1, 1)], [(1, 1)])) +
      step(field(2, 2, field(1, 0, 9)) + flow_stat([(1, 1)], [(1, 1)])))
write("corpus/heartbeat/duplicate_map_keys",
      step(header(2, 5) + flow_stat([(1, 10), (1, 20)], [(1, 1), (1, 2)])))
write("corpus/heartbeat/empty_report",
      step(header(2, 6) + flow_stat([(1, 1)], [])) + step(header(2, 6) + field(9, 2, b"")))

write("corpus/heartbeat/start_times_and_node_info",
      step(header(2, 1) + peer_and_info(b"10.0.0.1:6800", b"fn-1")) +
      step(header(2, 1) + flow_stat([(1, 10)], [(1, 5)]) + start_times([(1, 1700000000000), (2, 7)])) +
      step(header(2, 2) + flow_stat([(1, 20)], []) + start_times([(1, 3)])) +
      step(header(2, 2) + flow_stat([(1, 20)], []) +
           field(99, 2, field(1, 2, b"flow_start_time_map") + field(2, 2, b"\xff\xff"))))

write("corpus/json/sample",
      b'{"state_size":{"1":1024,"2":2048},"last_exec_time_map":{"1":100,"2":200},"start_time_map":{}}')
write("corpus/json/legacy", b'{"state_size":{"1":1024},"last_exec_time_map":{"1":100}}')
write("corpus/json/empty", b'{"state_size":{},"last_exec_time_map":{},"start_time_map":{}}')
write("corpus/json/extremes",
      b'{"state_size":{"0":18446744073709551615},"last_exec_time_map":'
      b'{"4294967295":-9223372036854775808},"start_time_map":{"5":9223372036854775807}}')
write("corpus/json/malformed", b'{"state_size":{"01":1.5},"x":[]}')
