"""What the wire tests share: the binary on a free port, waiting with a
deadline, the server's RSS and CPU, and the generated protos."""

import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

BINARY = None  # Set by setup().
FLOWNODE, FRONTEND = 2, 1  # greptime.v1.meta.Role


class Protos:
    """The generated modules (greptime.v1.meta and metasrv.v1)."""


meta = Protos()


def setup(binary, pydir):
    """Points the helpers at the binary and imports the generated protos."""
    global BINARY
    BINARY = binary
    sys.path.insert(0, pydir)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from greptime.v1.meta import cluster_pb2, common_pb2, heartbeat_pb2
    from metasrv.v1 import metasrv_pb2
    meta.cluster_pb2, meta.common_pb2 = cluster_pb2, common_pb2
    meta.heartbeat_pb2, meta.metasrv_pb2 = heartbeat_pb2, metasrv_pb2


# Built with sanitizers (ASan keeps freed memory in quarantine): RSS bounds
# are not checked then.
SANITIZED = bool(os.environ.get("METASRV_SANITIZED"))


def cpu_seconds(pid):
    """User plus system CPU time of `pid` so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")



def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(check, timeout=15.0, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except (OSError, ConnectionError):
            pass
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def accepts(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


class Server:
    """The metasrv binary on a free loopback port; its stderr in a file.
    With `metrics`, its /metrics on another (metric()). `wrapper`: a command
    it runs under (prlimit, say)."""

    def __init__(self, *extra, metrics=False, fresh_scrapes=True, wrapper=()):
        self.port = free_port()
        self.addr = f"127.0.0.1:{self.port}"
        self.metrics_port = free_port() if metrics else None
        metrics_addr = f"127.0.0.1:{self.metrics_port}" if metrics else ""
        self.log = tempfile.NamedTemporaryFile(prefix="metasrv-", suffix=".log",
                                               delete=False)
        # A test reads /metrics right after a change and must see it: an
        # exposition slow to build (ASan, a loaded machine) would otherwise
        # be served again for twenty times as long (ScrapeFloodTest keeps
        # the reuse, with fresh_scrapes=False).
        fresh = ["--metrics_reuse_threshold=0"] if fresh_scrapes else []
        self.proc = subprocess.Popen(
            [*wrapper, BINARY, f"--bind_addr={self.addr}",
             f"--metrics_addr={metrics_addr}",
             *fresh, *extra],
            stdout=subprocess.DEVNULL, stderr=self.log)
        wait_for(lambda: accepts(self.port), what=f"metasrv on {self.addr}")

    def metric(self, name, labels=""):
        """The value of one series on /metrics (`labels` as written there,
        e.g. 'reason="peer_calls"'), or None when it is not there."""
        with urllib.request.urlopen(
                f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=5) as r:
            text = r.read().decode()
        series = f"{name}{{{labels}}}" if labels else name
        for line in text.splitlines():
            if line.startswith(series + " "):
                return float(line.split()[-1])
        return None

    def stop(self):
        # The server's own bound on a stop is --shutdown_grace plus 10 s
        # for calls to end; an ASan build after a flood of calls needs more.
        self.proc.terminate()
        try:
            self.proc.wait(timeout=60 if SANITIZED else 30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise
        finally:
            self.log.close()

    def log_text(self):
        with open(self.log.name) as f:
            return f.read()


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def header(role, member_id):
    h = meta.common_pb2.RequestHeader()
    h.protocol_version = 1
    h.role = role
    h.member_id = member_id
    return h


def report(member_id, flows):
    req = meta.heartbeat_pb2.HeartbeatRequest()
    req.header.CopyFrom(header(FLOWNODE, member_id))
    req.peer.id = member_id
    req.peer.addr = f"10.0.0.{member_id}:6800"
    for flow_id, size, last_exec in flows:
        req.flow_stat.flow_stat_size[flow_id] = size
        req.flow_stat.flow_last_exec_time_map[flow_id] = last_exec
    return req


def parse(cls, data):
    msg = cls()
    msg.ParseFromString(data)
    return msg




def run_tests():
    """main() of a wire test: --binary and --pydir, then unittest."""
    import argparse
    import unittest
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--pydir", required=True)
    args, rest = parser.parse_known_args()
    setup(args.binary, args.pydir)
    unittest.main(argv=[sys.argv[0], *rest], verbosity=2)
