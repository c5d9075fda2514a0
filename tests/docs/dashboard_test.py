"""The Grafana dashboard's queries, without Grafana.

  python3 dashboard_test.py METASRV LOADGEN DASHBOARD.json

Every query of every panel is parsed by promtool (as a recording rule of a
rules file `promtool check rules` reads), then evaluated by a real
Prometheus (Debian's) that scrapes a real metasrv, elected on a real etcd,
while loadgen drives heartbeats, GetFlowState and Range reads and watchers
against it. Each query must return data. Exits 1 naming each query that
does not.
"""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

RATE_INTERVAL = "10s"  # What $__rate_interval becomes: 10 scrapes at 1 s.


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def queries(dashboard):
    """(panel title, expr) of every target, Grafana's variables filled."""
    out = []
    for panel in json.load(open(dashboard, encoding="utf-8"))["panels"]:
        for target in panel.get("targets", []):
            expr = (target["expr"].replace("$__rate_interval", RATE_INTERVAL)
                    .replace("$job", "metasrv"))
            out.append((panel["title"], expr))
    return out


def parse_with_promtool(exprs, work):
    rules = os.path.join(work, "dashboard_rules.yaml")
    with open(rules, "w", encoding="utf-8") as f:
        f.write("groups:\n  - name: dashboard\n    rules:\n")
        for i, (_, expr) in enumerate(exprs):
            f.write(f"      - record: dashboard:query_{i}\n")
            f.write(f"        expr: {json.dumps(expr)}\n")
    subprocess.run(["promtool", "check", "rules", rules], check=True,
                   stdout=subprocess.DEVNULL)


def wait_for(what, check, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            if check():
                return
        except OSError:
            pass
        time.sleep(0.5)
    raise SystemExit(f"timed out waiting for {what}")


def query(prom_port, expr):
    url = (f"http://127.0.0.1:{prom_port}/api/v1/query?" +
           urllib.parse.urlencode({"query": expr}))
    with urllib.request.urlopen(url, timeout=5) as answer:
        body = json.load(answer)
    if body.get("status") != "success":
        raise SystemExit(f"Prometheus refused {expr!r}: {body}")
    return body["data"]["result"]


def bad_calls(grpc_port, n=3):
    """`n` calls that fail (INVALID_ARGUMENT: a request that is not
    protobuf), so that the errors panel has something to draw."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    "..", "wire"))
    import tonic_client  # pylint: disable=import-outside-toplevel
    conn = tonic_client.Connection(f"127.0.0.1:{grpc_port}")
    try:
        for _ in range(n):
            call = conn.open("/greptime.v1.meta.Heartbeat/AskLeader")
            call.send(b"\xff\xff\xff", end=True)
            try:
                call.finish()
            except tonic_client.CallError:
                pass
    finally:
        conn.close()


ERRORS_PANEL = "Errors by method and code"


def start(argv, log):
    return subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)


def main(metasrv, loadgen, dashboard):
    exprs = queries(dashboard)
    work = tempfile.mkdtemp(prefix="metasrv-dashboard-")
    procs = []
    log = open(os.path.join(work, "log"), "w", encoding="utf-8")
    try:
        parse_with_promtool(exprs, work)
        client, peer, grpc, http, prom = (free_port() for _ in range(5))
        procs.append(start([
            "etcd", "--data-dir", os.path.join(work, "etcd"),
            "--listen-client-urls", f"http://127.0.0.1:{client}",
            "--advertise-client-urls", f"http://127.0.0.1:{client}",
            "--listen-peer-urls", f"http://127.0.0.1:{peer}",
            "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
            "--initial-cluster", f"default=http://127.0.0.1:{peer}"], log))
        procs.append(start([
            metasrv, f"--bind_addr=127.0.0.1:{grpc}",
            f"--metrics_addr=127.0.0.1:{http}",
            f"--store_addrs=127.0.0.1:{client}", "--lease_ttl=2s"], log))
        wait_for("metasrv to lead", lambda: urllib.request.urlopen(
            f"http://127.0.0.1:{http}/ready", timeout=2).read() == b"leader\n")
        procs.append(start([
            loadgen, f"--target=127.0.0.1:{grpc}", "--mode=open",
            "--streams=20", "--flows=10", "--interval=500ms", "--warmup=0s",
            "--duration=120s", "--state_readers=1", "--range_readers=1",
            "--watchers=2"], log))
        config = os.path.join(work, "prometheus.yml")
        with open(config, "w", encoding="utf-8") as f:
            f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                    "scrape_configs:\n  - job_name: metasrv\n"
                    f"    static_configs:\n      - targets: ['127.0.0.1:{http}']\n")
        procs.append(start([
            "prometheus", f"--config.file={config}",
            f"--storage.tsdb.path={os.path.join(work, 'tsdb')}",
            f"--web.listen-address=127.0.0.1:{prom}", "--log.level=warn"], log))
        wait_for("Prometheus to scrape", lambda: query(
            prom, 'up{job="metasrv"} == 1'), timeout=60)
        # Until each query has data, or 60 s of load.
        missing = list(exprs)
        deadline = time.time() + 60
        while missing and time.time() < deadline:
            bad_calls(grpc)
            time.sleep(1)
            missing = [(t, e) for t, e in missing if not query(prom, e)]
        # The errors panel draws only the method and code pairs that failed,
        # not a flat line for each of the hundreds that did not.
        errors = [e for t, e in exprs if t == ERRORS_PANEL]
        for expr in errors:
            series = query(prom, expr)
            drawn = {(s["metric"].get("grpc_method"), s["metric"].get("grpc_code"))
                     for s in series}
            if not series or any(float(s["value"][1]) <= 0 for s in series) or \
                    len(drawn) > 5:
                print(f"panel {ERRORS_PANEL!r} draws {sorted(drawn)}: not only "
                      "the failing pairs", file=sys.stderr)
                missing.append((ERRORS_PANEL, expr))
        for title, expr in missing:
            print(f"panel {title!r}: no data for {expr}", file=sys.stderr)
        if missing:
            log.flush()
            with open(os.path.join(work, "log"), encoding="utf-8") as f:
                sys.stderr.write("".join(f.readlines()[-40:]))
        print(f"{len(exprs)} queries parsed by promtool, "
              f"{len(exprs) - len(missing)} returned data from a real "
              f"Prometheus, {len(missing)} did not")
        return 1 if missing else 0
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
        log.close()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
