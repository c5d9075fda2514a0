"""docs/alerts.yaml under a real Prometheus during the incidents its alerts
exist for.

  python3 alerts_failover_test.py METASRV PYDIR ALERTS_YAML

Three replicas on a real etcd, a flownode (tonic's bytes, tests/wire) that
follows the leader and reports one stuck flow, and Debian's Prometheus
scraping all three with the shipped rules, their durations scaled from
minutes to seconds (1m -> 4s). Then the leader is killed, and later etcd is
paused past the lease TTL (no replica leads) and resumed. Throughout, the
stuck flow must keep exactly one MetasrvFlowStalled alert, firing, never
restarted (its activeAt unchanged), and each fault raises one alert, not
one per replica. Exits 1 saying what went wrong.
"""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

SCALE = 4  # Seconds per minute of the shipped rules.
STUCK_FLOW, LIVE_FLOW, NODE = 7, 8, 1


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(what, check, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            value = check()
            if value:
                return value
        except (OSError, ValueError):
            # Not up yet: refused, or a Prometheus still starting, whose
            # API answers 503 "Service Unavailable" (not JSON) until ready.
            pass
        time.sleep(0.25)
    raise SystemExit(f"timed out waiting for {what}")


def scaled_rules(text):
    """The rules with every duration of minutes or hours made SCALE seconds
    per minute: for, keep_firing_for, ranges and subquery steps."""
    def seconds(match):
        n, unit = int(match.group(1)), match.group(2)
        return f"{n * SCALE * (60 if unit == 'h' else 1)}s"
    return re.sub(r"\b(\d+)([mh])\b(?=[\]:]|\s*$)", seconds, text,
                  flags=re.MULTILINE)


def http_get(port, path):
    """The body of GET `path`, whatever its status (/ready answers 503)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}",
                                    timeout=2) as answer:
            return answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.read().decode()


def alerts(prom_port):
    """name -> list of (labels, state, activeAt) of the alerts now."""
    body = json.loads(http_get(prom_port, "/api/v1/alerts"))
    out = {}
    for alert in body["data"]["alerts"]:
        labels = alert["labels"]
        out.setdefault(labels["alertname"], []).append(
            (labels, alert["state"], alert.get("activeAt")))
    return out


class Flownode(threading.Thread):
    """Reports flow 7 (last executed an hour ago) and flow 8 (now) every
    0.5 s to the leader, found by AskLeader among `addrs`."""

    def __init__(self, addrs):
        super().__init__(daemon=True)
        self.addrs = addrs
        self.stop = threading.Event()
        self.reports = 0

    def leader(self):
        for addr in self.addrs:
            try:
                conn = tonic_client.Connection(addr)
                try:
                    req = harness.meta.heartbeat_pb2.AskLeaderRequest(
                        header=harness.header(harness.FRONTEND, 0))
                    answer = harness.parse(
                        harness.meta.heartbeat_pb2.AskLeaderResponse,
                        conn.unary("/greptime.v1.meta.Heartbeat/AskLeader",
                                   req))
                    return answer.leader.addr
                finally:
                    conn.close()
            except (OSError, tonic_client.CallError, AssertionError):
                continue
        return None

    def run(self):
        stuck = int(time.time() * 1000) - 3600 * 1000
        while not self.stop.is_set():
            addr = self.leader()
            if addr is None:
                time.sleep(0.2)
                continue
            try:
                conn = tonic_client.Connection(addr)
                call = conn.open("/greptime.v1.meta.Heartbeat/Heartbeat")
                while not self.stop.is_set():
                    now = int(time.time() * 1000)
                    call.send(harness.report(
                        NODE, [(STUCK_FLOW, 1000, stuck),
                               (LIVE_FLOW, 1000, now)]).SerializeToString())
                    answer = harness.parse(
                        harness.meta.heartbeat_pb2.HeartbeatResponse,
                        call.recv(timeout=3))
                    if answer.header.HasField("error"):
                        break  # Not the leader any more.
                    self.reports += 1
                    time.sleep(0.5)
                conn.close()
            except Exception:  # pylint: disable=broad-except
                # Whatever broke the stream (a replica killed or stopped):
                # find the leader again, as a flownode does.
                time.sleep(0.2)


def main(metasrv, pydir, rules_path):
    harness.setup(metasrv, pydir)
    work = tempfile.mkdtemp(prefix="metasrv-alerts-")
    log = open(os.path.join(work, "log"), "w", encoding="utf-8")
    procs = []
    problems = []

    def start(argv):
        procs.append(subprocess.Popen(argv, stdout=log,
                                      stderr=subprocess.STDOUT))
        return procs[-1]

    try:
        client, peer, prom = free_port(), free_port(), free_port()
        etcd = start([
            "etcd", "--data-dir", os.path.join(work, "etcd"),
            "--listen-client-urls", f"http://127.0.0.1:{client}",
            "--advertise-client-urls", f"http://127.0.0.1:{client}",
            "--listen-peer-urls", f"http://127.0.0.1:{peer}",
            "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
            "--initial-cluster", f"default=http://127.0.0.1:{peer}"])
        replicas = []  # (process, grpc address, metrics port)
        for _ in range(3):
            grpc, http = free_port(), free_port()
            replicas.append((start([
                metasrv, f"--bind_addr=127.0.0.1:{grpc}",
                f"--metrics_addr=127.0.0.1:{http}",
                f"--store_addrs=127.0.0.1:{client}", "--lease_ttl=2s",
                "--flow_stall_after=30s"]), f"127.0.0.1:{grpc}", http))

        def leader_index():
            for i, (proc, _, http) in enumerate(replicas):
                if proc.poll() is None and http_get(http, "/ready") == "leader\n":
                    return i
            return None

        first = wait_for("a leader", lambda: leader_index() is not None
                         and leader_index() + 1) - 1
        rules = os.path.join(work, "alerts.yaml")
        with open(rules_path, encoding="utf-8") as f, \
                open(rules, "w", encoding="utf-8") as out:
            out.write(scaled_rules(f.read()))
        config = os.path.join(work, "prometheus.yml")
        targets = ", ".join(f"'127.0.0.1:{http}'" for _, _, http in replicas)
        with open(config, "w", encoding="utf-8") as f:
            f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                    f"rule_files: ['{rules}']\n"
                    "scrape_configs:\n  - job_name: metasrv\n"
                    f"    static_configs:\n      - targets: [{targets}]\n")
        start(["prometheus", f"--config.file={config}",
               f"--storage.tsdb.path={os.path.join(work, 'tsdb')}",
               f"--web.listen-address=127.0.0.1:{prom}", "--log.level=warn"])
        node = Flownode([addr for _, addr, _ in replicas])
        node.start()

        def stalled_firing():
            found = alerts(prom).get("MetasrvFlowStalled", [])
            return found if len(found) == 1 and found[0][1] == "firing" else None

        fired = wait_for("MetasrvFlowStalled to fire", stalled_firing, 90)
        active_at = fired[0][2]

        def watch(phase, seconds):
            """Checks every half second for `seconds` that the stuck flow
            has one firing alert, active since the first; returns every
            alert name seen and how many of each at most."""
            most = {}
            deadline = time.time() + seconds
            while time.time() < deadline:
                now = alerts(prom)
                stalled = now.get("MetasrvFlowStalled", [])
                if len(stalled) != 1 or stalled[0][1] != "firing" or \
                        stalled[0][2] != active_at:
                    problems.append(f"{phase}: MetasrvFlowStalled is {stalled}, "
                                    f"not one firing since {active_at}")
                    return most
                for name, found in now.items():
                    most[name] = max(most.get(name, 0), len(found))
                time.sleep(0.5)
            return most

        watch("before the failover", 3)
        # The leader killed: another is elected within the TTL, the flownode
        # follows it, and its series replace the old leader's.
        replicas[first][0].send_signal(signal.SIGKILL)
        replicas[first][0].wait()
        second = wait_for("a new leader", lambda: leader_index() is not None
                          and leader_index() + 1, 30) - 1
        seen = watch("after the leader was killed", 8 * SCALE)
        if seen.get("MetasrvDown", 0) != 1:
            problems.append(f"the killed replica raised {seen.get('MetasrvDown', 0)} "
                            "MetasrvDown alerts, not 1")
        # The store paused past the TTL: nobody leads, no flow series at all.
        etcd.send_signal(signal.SIGSTOP)
        wait_for("no leader", lambda: leader_index() is None, 30)
        seen = watch("while no replica leads", 3 * SCALE)
        etcd.send_signal(signal.SIGCONT)
        wait_for("a leader again", lambda: leader_index() is not None, 30)
        seen_after = watch("after the store came back", 4 * SCALE)
        for name in ("MetasrvStoreUnhealthy", "MetasrvNoLeader"):
            count = max(seen.get(name, 0), seen_after.get(name, 0))
            if count > 1:
                problems.append(f"one store outage raised {count} {name} alerts")
        del second
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                p.send_signal(signal.SIGCONT)
                p.terminate()
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
        log.close()
        if problems:
            with open(os.path.join(work, "log"), encoding="utf-8") as f:
                sys.stderr.write("".join(f.readlines()[-30:]))
    for problem in problems:
        print(problem, file=sys.stderr)
    print("stuck flow: one MetasrvFlowStalled alert, firing through a killed "
          "leader and a store outage" if not problems else
          f"{len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    "..", "wire"))
    import harness  # pylint: disable=import-error
    import tonic_client  # pylint: disable=import-error
    sys.exit(main(*sys.argv[1:4]))
