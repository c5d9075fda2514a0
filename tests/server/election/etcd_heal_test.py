"""A partition of a three-member etcd, and its heal (issue 67).

  python3 etcd_heal_test.py METASRV GEN_PY

Three etcd members and three replicas, each in a network namespace of its
own on partition_test.py's bridge (it re-runs itself the same way, and is
skipped, exit 77, where a namespace cannot be made). Replica i lists etcd
member i first. The leader and its member are cut from the other two
members and replicas for 14 s, then healed. etcd runs
with --pre-vote=false, 3.4's default: the member that rejoins has raised
its raft term while alone and deposes etcd's leader, so etcd answers
nothing for a second or more right after the heal, the fault the heal
itself is. Per run:
  - the cut costs one failover at most: a new leader accepts reports;
  - the heal costs none while etcd's outage after it (timed by reads
    through every member's gateway) is shorter than what a lease is sure to
    ride out (0.95 - 1/6 of the TTL): no replica becomes leader
    (metasrv_leader_changes_total{cause="elected"} summed over the replicas)
    from the heal until 15 s after it, and the leader after the heal is the
    one before it; a longer outage is reported, not judged, and at least one
    run of three must be judged;
  - its flow state is intact: the report made before the heal is there.
Prints each run's figures; exits 1 naming what failed.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

import partition_test as pt

RUNS = 3
TTL = 5
# The etcd outage a leader certainly rides out: its lease is kept until
# 0.95 TTL after the last acknowledged keep-alive, at most TTL/6 old when
# etcd stops answering (the probe's 0.1 s resolution off).
RIDE = TTL * (0.95 - 1 / 6) - 0.1
ETCD_IPS = [f"{pt.NET}.{20 + i}" for i in range(3)]
CLIENT, PEER = 2379, 2380
ELECTED = 'metasrv_leader_changes_total{cause="elected"}'


class Cluster(pt.Cluster):
    """partition_test's cluster (its start, leaders and stop), on three
    etcd members, without probers."""

    def __init__(self, metasrv, work, network):  # pylint: disable=super-init-not-called
        self.log = open(os.path.join(work, "log"), "w", encoding="utf-8")
        self.procs, self.probers = [], []
        initial = ",".join(f"e{i}=http://{ip}:{PEER}"
                           for i, ip in enumerate(ETCD_IPS))
        for i, ip in enumerate(ETCD_IPS):
            network.add(f"e{i}", ip)
        for i, ip in enumerate(ETCD_IPS):
            self.start(f"e{i}", [
                "etcd", "--name", f"e{i}",
                "--data-dir", os.path.join(work, f"e{i}"),
                "--listen-client-urls", f"http://{ip}:{CLIENT}",
                "--advertise-client-urls", f"http://{ip}:{CLIENT}",
                "--listen-peer-urls", f"http://{ip}:{PEER}",
                "--initial-advertise-peer-urls", f"http://{ip}:{PEER}",
                "--initial-cluster", initial, "--pre-vote=false",
                "--logger=zap", "--log-level=error"])
        self.availability = Availability()
        self.availability.start()
        self.grpc, self.http = [], []
        for i in range(3):
            ns = f"r{i}"
            network.add(ns, pt.replica_ip(i))
            self.grpc.append(f"{pt.replica_ip(i)}:{pt.GRPC_PORT}")
            self.http.append(f"{pt.replica_ip(i)}:{pt.HTTP_PORT}")
            # Its own member first: the client moves on only when it fails.
            stores = [ETCD_IPS[(i + k) % 3] for k in range(3)]
            self.start(ns, [metasrv, f"--bind_addr={self.grpc[i]}",
                            f"--metrics_addr={self.http[i]}",
                            "--store_addrs=" + ",".join(
                                f"{ip}:{CLIENT}" for ip in stores),
                            f"--lease_ttl={TTL}s"])

    def elected(self):
        """Times any replica became leader, over all three."""
        return sum(pt.metric(addr, ELECTED) or 0 for addr in self.http)

    def stop(self):
        self.availability.stop.set()
        super().stop()


class Availability(threading.Thread):
    """Reads a key through every member's JSON gateway (linearizable: a
    quorum must answer) every 100 ms; `answered` holds when any did."""

    def __init__(self):
        super().__init__(daemon=True)
        self.answered = []
        self.stop = threading.Event()

    def run(self):
        body = json.dumps({"key": "eA=="}).encode()  # "x"
        while not self.stop.is_set():
            for ip in ETCD_IPS:
                try:
                    urllib.request.urlopen(urllib.request.Request(
                        f"http://{ip}:{CLIENT}/v3/kv/range", data=body),
                        timeout=0.3).read()
                    self.answered.append(time.time())
                    break
                except OSError:
                    continue
            time.sleep(0.1)

    def longest_gap(self, start, end):
        """The longest time between answers within [start, end]."""
        times = [start] + [t for t in self.answered if start < t < end] + [end]
        return max(b - a for a, b in zip(times, times[1:]))


def report(addr, node):
    """One flownode report of flow 1 to `addr`; whether it was accepted."""
    conn = pt.tonic_client.Connection(addr, timeout=2)
    try:
        call = conn.open("/greptime.v1.meta.Heartbeat/Heartbeat")
        call.send(pt.harness.report(node, [(1, 100 + node, 1)])
                  .SerializeToString())
        answer = pt.harness.parse(pt.harness.meta.heartbeat_pb2.HeartbeatResponse,
                                  call.recv(timeout=2))
        return not answer.header.HasField("error")
    except Exception:  # pylint: disable=broad-except
        return False
    finally:
        conn.sock.close()


def one_run(cluster, network, problems, run, judged):
    old = pt.single_leader(cluster, problems, f"run {run}")
    if old is None:
        return
    before = cluster.elected()
    # The leader and its member, cut from the other members and replicas
    # (the test still reads every replica's /ready and /metrics).
    others = [ip for k, ip in enumerate(ETCD_IPS) if k != old] + \
        [pt.replica_ip(k) for k in range(3) if k != old]
    for ns in (f"r{old}", f"e{old}"):
        for ip in others:
            network.drop_from(ns, ip)
    for k in range(3):
        if k == old:
            continue
        for ns in (f"r{k}", f"e{k}"):
            network.drop_from(ns, pt.replica_ip(old))
            network.drop_from(ns, ETCD_IPS[old])
    cut = time.time()
    took = pt.wait(lambda: any(k != old and report(cluster.grpc[k], 7)
                               for k in cluster.leaders()), 30)
    time.sleep(max(0.0, 14 - (time.time() - cut)))
    leaders = cluster.leaders()
    failovers = cluster.elected() - before
    if took is None or len(leaders) != 1:
        problems.append(f"run {run}: no new leader during the cut: {leaders}")
        network.heal()
        return
    new = leaders[0]
    at_heal = cluster.elected()
    network.heal()
    healed = time.time()
    while time.time() - healed < 15:
        led = cluster.leaders()
        if len(led) > 1:
            problems.append(f"run {run}: two replicas lead at once: {led}")
        time.sleep(0.1)
    after = cluster.elected() - at_heal
    outage = cluster.availability.longest_gap(healed - 1, time.time())
    leaders = cluster.leaders()
    flows = pt.metric(cluster.http[new], "metasrv_flows")
    print(f"run {run}: replica {old} and its member cut 14 s: {failovers:.0f} "
          f"failover(s), replica {new} accepted reports {took:.1f} s after the "
          f"cut; after the heal: etcd answered nothing for {outage:.1f} s, "
          f"{after:.0f} leader changes in 15 s, leader {leaders}, flows on it "
          f"{flows}")
    if failovers > 1:
        problems.append(f"run {run}: the cut cost {failovers:.0f} failovers")
    if outage >= RIDE:
        # Longer than a lease can be kept through: a step-down is right.
        print(f"run {run}: etcd's outage ({outage:.1f} s) was longer than "
              f"a lease is sure to ride out ({RIDE:.1f} s); not judged")
        return
    if after != 0:
        problems.append(f"run {run}: the heal cost {after:.0f} leader changes "
                        f"through an etcd outage of {outage:.1f} s")
    if leaders != [new]:
        problems.append(f"run {run}: the leader moved after the heal: {leaders}")
    if flows != 1:
        problems.append(f"run {run}: the flow state was lost: {flows} flows")
    judged.append(run)


def main(metasrv, pydir):
    pt.harness, pt.tonic_client = None, None
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    "..", "..", "wire"))
    import harness  # pylint: disable=import-error
    import tonic_client  # pylint: disable=import-error
    harness.setup(metasrv, pydir)
    pt.harness, pt.tonic_client = harness, tonic_client
    network = pt.Network()
    work = tempfile.mkdtemp(prefix="metasrv-etcd-heal-")
    cluster = Cluster(metasrv, work, network)
    problems, judged = [], []
    try:
        if pt.wait(lambda: len(cluster.leaders()) == 1, 60) is None:
            problems.append("no leader at start")
        else:
            for run in range(RUNS):
                one_run(cluster, network, problems, run, judged)
                # The old leader's replica back as a follower first.
                pt.wait(lambda: all(pt.get(a, "/ready")[0] == 200
                                    for a in cluster.http), 30)
    finally:
        cluster.stop()
        if problems:
            with open(os.path.join(work, "log"), encoding="utf-8") as f:
                sys.stderr.write("".join(f.readlines()[-60:]))
        shutil.rmtree(work, ignore_errors=True)
    if not problems and not judged:
        problems.append("no run's heal was short enough to judge")
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    if os.environ.get("METASRV_PARTITION_NS") != "1":
        sys.exit(pt.in_namespace())
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    sys.exit(main(sys.argv[1], sys.argv[2]))
