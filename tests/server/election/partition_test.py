"""Network partitions between three replicas and etcd: each in a network
namespace of its own, joined by veth links to a bridge, cut with nftables.

  python3 partition_test.py METASRV GEN_PY

Re-runs itself under `unshare --net --mount` (root, or user namespaces,
needed; exits 77, skipped, naming why, where a namespace cannot be made or
ip/nft is missing). Inside, the test's own namespace holds the bridge
(10.77.0.254, where the test and its clients are); etcd's namespace is
10.77.0.10, replica i's 10.77.0.1i. Nothing is routed out, and everything
goes with the test's namespace. A cut drops the packets where they arrive,
on both sides, as on a cut link: TCP retransmits; nothing is refused.

Scenarios, each healed after a cut of 14 s or 60 s:
  - a follower cut from etcd;
  - the leader cut from etcd (14 s and 60 s);
  - the leader cut from everything: etcd, the other replicas, the clients.
Checks, with TTL = --lease_ttl; a prober per replica sends it a flownode
report every 50 ms and notes which were accepted:
  - no two replicas accept reports at one instant (nor say they lead, on
    /ready, at one sample);
  - a leader cut from etcd accepts no report sent later than TTL + 1 s
    after the cut, and stops saying it leads by then;
  - another replica accepts reports within TTL + 2 s of the cut;
  - within TTL + 5 s of the heal, the cut replica is back: /ready 200
    naming the leader and its store healthy (metasrv_store_healthy 1).
Prints each scenario's figures; exits 1 naming what failed.
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

TTL = 3.0
SKIP = 77
TABLE = "metasrv_partition"
NET = "10.77.0"
TEST_IP = f"{NET}.254"  # The bridge: the test and its clients.
ETCD_IP = f"{NET}.10"
GRPC_PORT, HTTP_PORT, ETCD_PORT = 3002, 4000, 2379
harness = tonic_client = None  # Imported in main().


def replica_ip(i):
    return f"{NET}.{11 + i}"


def in_namespace():
    """Re-executes this script in new network and mount namespaces; its
    exit code."""
    for tool in ("nft", "ip", "unshare", "nsenter"):
        if shutil.which(tool) is None:
            print(f"SKIPPED: {tool} is missing "
                  "(apt-get install nftables iproute2 util-linux)")
            return SKIP
    probe = subprocess.run(
        ["unshare", "--net", "--mount", "--map-root-user", "sh", "-c",
         "ip link add br0 type bridge && ip link add v0 type veth peer name v1"],
        capture_output=True, check=False)
    if probe.returncode != 0:
        print("SKIPPED: cannot make network namespaces, a bridge and veth "
              "links here: " + probe.stderr.decode().strip())
        return SKIP
    env = dict(os.environ, METASRV_PARTITION_NS="1")
    return subprocess.run(["unshare", "--net", "--mount", "--map-root-user",
                           sys.executable, *sys.argv], env=env,
                          check=False).returncode


def run(*argv):
    subprocess.run(argv, check=True)


def in_ns(ns, argv):
    """`argv` run in namespace `ns` (None: the test's own)."""
    return argv if ns is None else ["nsenter", f"--net=/run/netns/{ns}",
                                    *argv]


def nft(ns, *args):
    run(*in_ns(ns, ["nft", *args]))


class Network:
    """The bridge, one namespace per member, each with a veth link to the
    bridge and an nft input chain for the cuts."""

    def __init__(self):
        # Our own mount namespace: /run/netns is ours, gone with it.
        run("mount", "-t", "tmpfs", "tmpfs", "/run")
        os.makedirs("/run/netns")
        run("ip", "link", "set", "lo", "up")
        run("ip", "link", "add", "br0", "type", "bridge")
        run("ip", "addr", "add", f"{TEST_IP}/24", "dev", "br0")
        run("ip", "link", "set", "br0", "up")
        self.spaces = [None]
        self.chain(None)

    def chain(self, ns):
        nft(ns, "add", "table", "inet", TABLE)
        nft(ns, "add", "chain", "inet", TABLE, "in",
            "{ type filter hook input priority 0; }")

    def add(self, ns, ip):
        run("ip", "netns", "add", ns)
        run("ip", "link", "add", f"v-{ns}", "type", "veth", "peer", "name", "eth0",
            "netns", ns)
        run("ip", "link", "set", f"v-{ns}", "master", "br0", "up")
        for argv in (["ip", "link", "set", "lo", "up"],
                     ["ip", "addr", "add", f"{ip}/24", "dev", "eth0"],
                     ["ip", "link", "set", "eth0", "up"]):
            run(*in_ns(ns, argv))
        self.spaces.append(ns)
        self.chain(ns)

    def drop_from(self, ns, ip):
        """Packets from `ip` arriving in `ns` dropped."""
        nft(ns, "add", "rule", "inet", TABLE, "in", "ip", "saddr", ip, "drop")

    def drop_all(self, ns):
        """Everything arriving in `ns` over its link dropped."""
        nft(ns, "add", "rule", "inet", TABLE, "in", "iifname", "eth0", "drop")

    def heal(self):
        for ns in self.spaces:
            nft(ns, "flush", "chain", "inet", TABLE, "in")


def get(addr, path):
    """(status, body) of GET http://addr/path; (0, '') if unreachable."""
    try:
        with urllib.request.urlopen(f"http://{addr}{path}", timeout=1) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()
    except OSError:
        return 0, ""


def metric(addr, name):
    _, body = get(addr, "/metrics")
    for line in body.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[-1])
    return None


class Prober(threading.Thread):
    """A flownode reporting to one replica every 50 ms on one stream (a new
    one after any error); notes (sent, answered) of each accepted report."""

    def __init__(self, addr, node):
        super().__init__(daemon=True)
        self.addr, self.node = addr, node
        self.accepted = []
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            try:
                conn = tonic_client.Connection(self.addr, timeout=1)
            except OSError:
                time.sleep(0.1)
                continue
            try:
                call = conn.open("/greptime.v1.meta.Heartbeat/Heartbeat")
                while not self.stop.is_set():
                    sent = time.time()
                    call.send(harness.report(
                        self.node, [(1, 100, int(sent * 1000))])
                        .SerializeToString())
                    answer = call.recv(timeout=1)
                    if answer is None:
                        break
                    answer = harness.parse(
                        harness.meta.heartbeat_pb2.HeartbeatResponse, answer)
                    if not answer.header.HasField("error"):
                        self.accepted.append((sent, time.time()))
                    time.sleep(0.05)
            except Exception:  # pylint: disable=broad-except
                pass  # A cut, a refusal, a step-down: a new stream.
            try:
                conn.sock.close()
            except OSError:
                pass
            time.sleep(0.1)


def runs(accepted):
    """The times a replica certainly led, from its accepted reports: from
    a run's first answer to its last sending, where a run is accepts no
    more than 0.5 s apart."""
    out = []
    for sent, answered in accepted:
        if out and sent - out[-1][2] <= 0.5:
            out[-1][1] = sent
            out[-1][2] = answered
        else:
            out.append([answered, sent, answered])
    return [(first, last) for first, last, _ in out if first < last]


class Cluster:
    def __init__(self, metasrv, work, network):
        self.work = work
        self.log = open(os.path.join(work, "log"), "w", encoding="utf-8")
        self.procs = []
        network.add("etcd", ETCD_IP)
        url = f"http://{ETCD_IP}:{ETCD_PORT}"
        peer = f"http://127.0.0.1:{ETCD_PORT + 1}"
        self.start("etcd", ["etcd", "--data-dir", os.path.join(work, "etcd"),
                            "--listen-client-urls", url,
                            "--advertise-client-urls", url,
                            "--listen-peer-urls", peer,
                            "--initial-advertise-peer-urls", peer,
                            "--initial-cluster", f"default={peer}"])
        self.grpc, self.http = [], []
        for i in range(3):
            ns = f"r{i}"
            network.add(ns, replica_ip(i))
            grpc = f"{replica_ip(i)}:{GRPC_PORT}"
            http = f"{replica_ip(i)}:{HTTP_PORT}"
            self.grpc.append(grpc)
            self.http.append(http)
            self.start(ns, [metasrv, f"--bind_addr={grpc}",
                            f"--metrics_addr={http}",
                            f"--store_addrs={ETCD_IP}:{ETCD_PORT}",
                            f"--lease_ttl={int(TTL)}s"])
        self.probers = [Prober(addr, 100 + i)
                        for i, addr in enumerate(self.grpc)]
        for prober in self.probers:
            prober.start()

    def start(self, ns, argv):
        self.procs.append(subprocess.Popen(in_ns(ns, argv), stdout=self.log,
                                           stderr=subprocess.STDOUT))

    def ready(self):
        return [get(addr, "/ready") for addr in self.http]

    def leaders(self):
        return [i for i, (_, body) in enumerate(self.ready())
                if body == "leader\n"]

    def back(self, i):
        """Whether replica i names a leader (/ready 200) with its store
        healthy."""
        status, _ = get(self.http[i], "/ready")
        return status == 200 and metric(self.http[i],
                                        "metasrv_store_healthy") == 1

    def stop(self):
        for prober in self.probers:
            prober.stop.set()
        for p in reversed(self.procs):
            p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
        self.log.close()


def wait(check, timeout, on_sample=None):
    """Seconds until check() held, sampling every 0.1 s; None if not within
    `timeout`."""
    start = time.time()
    while time.time() - start < timeout:
        if on_sample is not None:
            on_sample()
        if check():
            return time.time() - start
        time.sleep(0.1)
    return None


def single_leader(cluster, problems, label):
    """The one replica that leads, or None (noted in `problems`)."""
    leaders = cluster.leaders()
    if len(leaders) != 1:
        problems.append(f"{label}: no single leader before the cut: {leaders}")
        return None
    return leaders[0]


def scenario(cluster, network, problems, who, cut_seconds):
    leader = single_leader(cluster, problems, who)
    if leader is None:
        return
    victim = leader if who != "follower" else (leader + 1) % 3
    alone = who == "leader alone"
    name = (f"the leader cut from everything for {cut_seconds} s" if alone
            else f"{who} cut from etcd for {cut_seconds} s")

    def no_two():
        led = cluster.leaders()
        if len(led) > 1:
            problems.append(f"{name}: two replicas lead at once: {led}")

    victim_ip = replica_ip(victim)
    network.drop_from(f"r{victim}", ETCD_IP)
    network.drop_from("etcd", victim_ip)
    if alone:
        for ns in (None, *(f"r{i}" for i in range(3) if i != victim)):
            network.drop_from(ns, victim_ip)
        network.drop_all(f"r{victim}")
    cut_at = time.time()
    if who != "follower":
        # Cut from everything, it cannot be asked: that it stops in time
        # is the lease's argument (docs/HA.md), checked when it can be.
        if not alone:
            stopped = wait(lambda: victim not in cluster.leaders(), TTL + 5,
                           no_two)
            print(f"{name}: the old leader stopped saying so {stopped} s "
                  "after the cut")
        if not alone and (stopped is None or stopped > TTL + 1):
            problems.append(f"{name}: the old leader stopped after {stopped} s "
                            f"(want within TTL + 1 = {TTL + 1} s)")
        taken = wait(lambda: any(
            answered > cut_at for i, p in enumerate(cluster.probers)
            if i != victim for _, answered in p.accepted[-3:]), TTL + 5, no_two)
        taken = None if taken is None else time.time() - cut_at
        print(f"{name}: another replica accepted a report {taken} s after "
              "the cut")
        if taken is None or taken > TTL + 2:
            problems.append(f"{name}: another replica accepted reports after "
                            f"{taken} s (want within TTL + 2 = {TTL + 2} s)")
    deadline = time.time() + cut_seconds
    while time.time() < deadline:
        no_two()
        time.sleep(0.2)
    if who != "follower" and not alone:
        late = [sent - cut_at for sent, _ in cluster.probers[victim].accepted
                if sent > cut_at]
        last = max(late, default=0.0)
        print(f"{name}: the old leader's last accepted report was sent "
              f"{last:.1f} s after the cut")
        if last > TTL + 1:
            problems.append(f"{name}: the old leader accepted a report sent "
                            f"{last:.1f} s after the cut (want at most "
                            f"TTL + 1 = {TTL + 1} s)")
    if who == "follower":
        kept = [a for a in cluster.probers[leader].accepted
                if cut_at < a[0] < deadline]
        print(f"{name}: the leader accepted {len(kept)} reports meanwhile")
        if len(kept) < cut_seconds * 5:
            problems.append(f"{name}: the leader accepted only {len(kept)} "
                            "reports while a follower was cut")
    network.heal()
    back = wait(lambda: cluster.back(victim), 120, no_two)
    print(f"{name}: back {back} s after the heal")
    if back is None or back > TTL + 5:
        problems.append(f"{name}: back {back} s after the heal "
                        f"(want within TTL + 5 = {TTL + 5} s)")
    # Every replica serves again before the next scenario.
    wait(lambda: all(cluster.back(i) for i in range(3)) and
         len(cluster.leaders()) == 1, 60)


def overlaps(cluster):
    """Instants at which two replicas both certainly accepted reports."""
    found = []
    led = [runs(p.accepted) for p in cluster.probers]
    for a in range(3):
        for b in range(a + 1, 3):
            for first_a, last_a in led[a]:
                for first_b, last_b in led[b]:
                    if max(first_a, first_b) < min(last_a, last_b):
                        found.append(f"replicas {a} and {b} both accepted "
                                     f"reports from {max(first_a, first_b)} "
                                     f"to {min(last_a, last_b)}")
    return found


def main(metasrv, pydir):
    global harness, tonic_client  # pylint: disable=global-statement
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    "..", "..", "wire"))
    import harness  # pylint: disable=import-error,redefined-outer-name
    import tonic_client  # pylint: disable=import-error,redefined-outer-name
    harness.setup(metasrv, pydir)
    network = Network()
    work = tempfile.mkdtemp(prefix="metasrv-partition-")
    cluster = Cluster(metasrv, work, network)
    problems = []
    try:
        if wait(lambda: len(cluster.leaders()) == 1 and
                all(cluster.back(i) for i in range(3)), 60) is None:
            problems.append(f"no leader at start: {cluster.ready()}")
        else:
            scenario(cluster, network, problems, "follower", 14)
            scenario(cluster, network, problems, "leader", 14)
            scenario(cluster, network, problems, "leader", 60)
            scenario(cluster, network, problems, "leader alone", 14)
        problems += overlaps(cluster)
        print("accepted reports per replica: " +
              ", ".join(str(len(p.accepted)) for p in cluster.probers))
    finally:
        cluster.stop()
        if problems:
            with open(os.path.join(work, "log"), encoding="utf-8") as f:
                sys.stderr.write("".join(f.readlines()[-40:]))
        shutil.rmtree(work, ignore_errors=True)
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    if os.environ.get("METASRV_PARTITION_NS") != "1":
        sys.exit(in_namespace())
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    sys.exit(main(sys.argv[1], sys.argv[2]))
