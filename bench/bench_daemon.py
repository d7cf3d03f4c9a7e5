#!/usr/bin/env python3
"""bench_daemon: N jobs submitted to one ebbd on the live sim market.

Starts ebbd from a build directory on the shipped AWS traces with an
accelerated clock (jobs run as simulated sim instances: no run_on), then

  1. base:      RSS of the empty ebbd (traces loaded, first poll done);
  2. submit:    N small, varied job specs over a few API connections,
                pipelined: submits per second;
  3. run:       for a fixed wall time while the jobs run and finish, samples
                VmRSS/VmHWM (/proc/PID/status), the ebb_event_loop_lag_seconds
                histogram (/metrics) and the round trip of a cheap API call
                (`providers`, no store access) every 100 ms;
  4. restart:   SIGKILL, start ebbd again on the same state directory (its
                clock continues where the killed one stopped) and times
                "took back N unfinished jobs", "reconciled N instances" and
                the first `jobs` answer (all: true) listing every job.

Prints the figures and their ratios to the targets of issue #6 (under
100 KB per managed job beyond the base, event-loop lag p99 under 10 ms).
Never fails on a number: exit 1 only when a run itself fails.
Python 3 standard library only. bench/README.md explains the figures.
"""
import argparse
import datetime
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

TARGET_KB_PER_JOB = 100.0
TARGET_LAG_P99_S = 0.010
PROBE_EVERY_S = 0.1

# Instance-type sets from the shipped AWS trace, with their weights.
TYPE_SETS = [
    (["p3.2xlarge"], 40),
    (["p3.2xlarge", "p3.8xlarge"], 20),
    (["p3.8xlarge", "p3.16xlarge"], 10),
    (["p2.xlarge"], 15),
    (["p2.8xlarge", "p2.16xlarge"], 15),
]
REGION_SETS = [([], 60), (["us-east-1", "us-west-2"], 25), (["eu-west-1"], 15)]
MARKETS = [("spot-fallback", 70), ("spot", 15), ("on-demand", 15)]
POLICIES = [(None, 60), ("greedy", 20), ("uniform-progress", 20)]


def pick(rng, weighted):
    total = sum(w for _, w in weighted)
    x = rng.uniform(0, total)
    for value, w in weighted:
        x -= w
        if x <= 0:
            return value
    return weighted[-1][0]


def fmt_minutes(m):
    return "%dh%dm" % (m // 60, m % 60) if m % 60 else "%dh" % (m // 60)


def job_spec(rng, i):
    """A small job spec: work 1-8 h, a deadline with 1.3-3x slack."""
    work = rng.randint(60, 480)                    # minutes
    overhead = rng.randint(3, 10)
    deadline = int(work * rng.uniform(1.3, 3.0)) + overhead + 1
    lines = [
        "name: bench-%d" % i,
        "run: [python3, train.py]",
        "work: %s" % fmt_minutes(work),
        "deadline: %s" % fmt_minutes(deadline),
        "restart_overhead: %dm" % overhead,
        "market: %s" % pick(rng, MARKETS),
    ]
    types = pick(rng, TYPE_SETS)
    regions = pick(rng, REGION_SETS)
    res = "resources: {instance_types: [%s]" % ", ".join(types)
    if regions:
        res += ", regions: [%s]" % ", ".join(regions)
    lines.append(res + "}")
    if rng.random() < 0.2:
        lines.append("checkpoint: {every: %dm, grace: 90s}" % rng.choice([30, 60, 120]))
    if rng.random() < 0.25:
        lines.append("budget: %d USD" % rng.randint(20, 200))
    policy = pick(rng, POLICIES)
    if policy:
        lines.append("policy: %s" % policy)
    return "\n".join(lines) + "\n"


# ---- ebbd -----------------------------------------------------------------

def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def write_config(path, source, port, start, speed):
    with open(path, "w") as f:
        f.write("""providers:
  sim:
    prices: {src}/data/traces/aws_spot_gpu_p2p3_6regions_2019-12-20_2020-02-29.csv
    availability: {src}/data/availability_aws_2020-03.csv
    align_availability: true
clock: {{start: {start}, speed: {speed}}}
metrics: {{listen: 127.0.0.1:{port}}}
""".format(src=source, start=start, speed=speed, port=port))


class Daemon:
    def __init__(self, build, state, config, log):
        env = dict(os.environ)
        env.setdefault("EBB_PLUGIN_PATH", build)
        self.log = log
        self.sock = os.path.join(state, "ebb.sock")
        if os.path.exists(self.sock):
            os.unlink(self.sock)  # a killed ebbd leaves it behind
        self.started = time.monotonic()
        self.started_wall = time.time()
        with open(log, "ab") as err:
            self.proc = subprocess.Popen(
                [os.path.join(build, "src", "ebbd"), "--config", config,
                 "--state-dir", state], stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=err, env=env)

    def alive(self):
        return self.proc.poll() is None

    def memory(self):
        """(VmRSS, VmHWM) in KiB."""
        out = {}
        with open("/proc/%d/status" % self.proc.pid) as f:
            for line in f:
                if line.startswith(("VmRSS:", "VmHWM:")):
                    out[line.split(":")[0]] = int(line.split()[1])
        return out["VmRSS"], out["VmHWM"]

    def kill(self, sig):
        self.proc.send_signal(sig)
        self.proc.wait()


class Conn:
    """One API connection: NDJSON requests, answers in request order."""

    def __init__(self, path, timeout=120):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.settimeout(timeout)
        self.s.connect(path)
        self.f = self.s.makefile("rb")
        self.next_id = 0

    def send(self, method, params=None):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method}
        if params is not None:
            msg["params"] = params
        self.s.sendall((json.dumps(msg) + "\n").encode())

    def recv(self):
        line = self.f.readline()
        if not line:
            raise IOError("ebbd closed the connection")
        answer = json.loads(line)
        if "error" in answer:
            raise IOError("ebbd answered %s" % answer["error"])
        return answer["result"]

    def call(self, method, params=None):
        self.send(method, params)
        return self.recv()

    def close(self):
        self.f.close()
        self.s.close()


def wait_answering(d, timeout):
    """Seconds from d's start until its socket answers `status`."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if not d.alive():
            raise RuntimeError("ebbd exited with %s; see %s" % (d.proc.returncode, d.log))
        try:
            # No short timeout: ebbd dies of SIGPIPE when a client closes
            # before its answer is written (it does not ignore SIGPIPE).
            c = Conn(d.sock, timeout=max(1.0, end - time.monotonic()))
            c.call("status")
            c.close()
            return time.monotonic() - d.started
        except (OSError, ValueError):
            time.sleep(0.01)
    raise RuntimeError("ebbd does not answer; see %s" % d.log)


# ---- metrics ----------------------------------------------------------------

def scrape(port):
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=30) as r:
        text = r.read().decode()
    lag = {}
    jobs = {}
    for line in text.splitlines():
        m = re.match(r'ebb_event_loop_lag_seconds_bucket\{le="([^"]+)"\} (\S+)', line)
        if m:
            lag[float(m.group(1))] = float(m.group(2))
            continue
        m = re.match(r'ebb_event_loop_lag_seconds_(sum|count) (\S+)', line)
        if m:
            lag[m.group(1)] = float(m.group(2))
            continue
        m = re.match(r'ebb_jobs\{state="([^"]+)"\} (\S+)', line)
        if m:
            jobs[m.group(1)] = int(float(m.group(2)))
    return lag, jobs


def lag_delta(after, before):
    return {k: after[k] - before.get(k, 0) for k in after}


def lag_quantile(h, q):
    """Prometheus histogram_quantile: linear inside the bucket."""
    bounds = sorted(k for k in h if isinstance(k, float))
    count = h.get("count", 0)
    if count <= 0:
        return float("nan")
    rank = q * count
    prev_bound, prev_cum = 0.0, 0.0
    for b in bounds:
        cum = h[b]
        if cum >= rank:
            if b == float("inf"):
                return prev_bound
            inside = cum - prev_cum
            return prev_bound + (b - prev_bound) * ((rank - prev_cum) / inside if inside else 0)
        prev_bound, prev_cum = b, cum
    return prev_bound


def lag_max_bound(h):
    """The upper bound of the highest bucket with an observation."""
    bounds = sorted(k for k in h if isinstance(k, float))
    prev = 0.0
    for b in bounds:
        if h[b] >= h.get("count", 0):
            return b, prev
        prev = b
    return float("inf"), prev


def quantile(xs, q):
    if not xs:
        return float("nan")
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))]


def lag_line(name, h):
    lo_hi = lag_max_bound(h)
    mean = h["sum"] / h["count"] if h.get("count") else float("nan")
    return ("%-22s %6d probes  p50 %6.2f ms  p99 %6.2f ms  mean %6.2f ms  "
            "max in (%g, %g] ms" % (name, h.get("count", 0), 1e3 * lag_quantile(h, 0.5),
                                   1e3 * lag_quantile(h, 0.99), 1e3 * mean,
                                   1e3 * lo_hi[1], 1e3 * lo_hi[0]))


# ---- phases -------------------------------------------------------------------

def submit_all(sock, specs, n_conns, window):
    """Submits every spec over n_conns connections, at most `window`
    requests in flight on each. Returns (seconds, ids)."""
    ids = [None] * len(specs)
    errors = []

    def worker(k):
        try:
            c = Conn(sock, timeout=600)
            mine = list(range(k, len(specs), n_conns))
            sent = done = 0
            while done < len(mine):
                while sent < len(mine) and sent - done < window:
                    i = mine[sent]
                    c.send("submit", {"file": "bench-%d.yaml" % i, "yaml": specs[i]})
                    sent += 1
                ids[mine[done]] = c.recv()["id"]
                done += 1
            c.close()
        except Exception as exc:  # reported by the caller
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(n_conns)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise RuntimeError("submit failed: %s" % errors[0])
    return time.monotonic() - t0, ids


class Sampler(threading.Thread):
    """Samples ebbd's memory every 100 ms and the round trip of `providers`."""

    def __init__(self, d):
        super().__init__(daemon=True)
        self.d = d
        self.stop = threading.Event()
        self.rss = []
        self.rtt = []

    def run(self):
        c = Conn(self.d.sock)
        while not self.stop.is_set():
            try:
                self.rss.append(self.d.memory())
                t = time.monotonic()
                c.call("providers")
                self.rtt.append(time.monotonic() - t)
            except (OSError, ValueError):
                break
            self.stop.wait(PROBE_EVERY_S)
        c.close()


def log_time(log, pattern, since):
    """(wall seconds, line) of the first log line matching pattern after
    `since` (a wall time), from the line's own timestamp."""
    with open(log, errors="replace") as f:
        for line in f:
            if pattern not in line:
                continue
            stamp = line.split(" ", 1)[0]
            t = datetime.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
                tzinfo=datetime.timezone.utc).timestamp()
            if t >= since - 0.001:
                return t, line.strip()
    return None, None


def wait_log(d, pattern, since, timeout):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        t, line = log_time(d.log, pattern, since)
        if t is not None:
            return t, line
        if not d.alive():
            raise RuntimeError("ebbd exited; see %s" % d.log)
        time.sleep(0.02)
    return None, None


def market_now(conn):
    st = conn.call("status")
    started = datetime.datetime.strptime(st["started_at"], "%Y-%m-%dT%H:%M:%S.%fZ"
                                         if "." in st["started_at"] else "%Y-%m-%dT%H:%M:%SZ")
    now = started + datetime.timedelta(seconds=st["uptime_s"])
    return now.strftime("%Y-%m-%dT%H:%M:%SZ")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.environ.get("EBB_BUILD_DIR",
                                                      os.path.join(here, "..", "build-rel")),
                    help="meson build directory with src/ebbd and the plugins "
                         "(default $EBB_BUILD_DIR or build-rel)")
    ap.add_argument("--source", default=os.path.join(here, ".."),
                    help="source root, for data/ (default: this script's ..)")
    ap.add_argument("--jobs", type=int, default=10000)
    ap.add_argument("--conns", type=int, default=4, help="API connections for the submits")
    ap.add_argument("--window", type=int, default=64,
                    help="requests in flight per connection")
    ap.add_argument("--speed", type=int, default=60, help="clock speed (60: 1 h in 1 min)")
    ap.add_argument("--start", default="2020-01-06T00:00:00Z", help="clock start")
    ap.add_argument("--base-wait", type=float, default=5.0,
                    help="seconds the empty ebbd runs before the base RSS")
    ap.add_argument("--run", type=float, default=60.0,
                    help="wall seconds of sampling after the submits")
    ap.add_argument("--settle", type=float, default=5.0,
                    help="wall seconds of sampling after the restart reconciled")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--state-dir", help="keep the state here (default: a temporary one, removed)")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    source = os.path.abspath(a.source)
    if not os.access(os.path.join(build, "src", "ebbd"), os.X_OK):
        sys.exit("bench_daemon: no %s/src/ebbd (build it, or pass --build)" % build)

    work = a.state_dir or tempfile.mkdtemp(prefix="ebb-bench-daemon.")
    os.makedirs(work, exist_ok=True)
    state = os.path.join(work, "state")
    log = os.path.join(work, "ebbd.log")
    port = free_port()
    config = os.path.join(work, "ebb.yaml")
    write_config(config, source, port, a.start, a.speed)
    rng = random.Random(a.seed)
    specs = [job_spec(rng, i) for i in range(a.jobs)]

    print("ebbd %s/src/ebbd, %d jobs, %d connections x %d in flight, clock %s at %dx, "
          "run %.0f s" % (build, a.jobs, a.conns, a.window, a.start, a.speed, a.run))
    d = Daemon(build, state, config, log)
    try:
        up = wait_answering(d, 60)
        time.sleep(a.base_wait)
        base_rss, base_hwm = d.memory()
        lag0, _ = scrape(port)

        sampler = Sampler(d)
        sampler.start()
        submit_s, ids = submit_all(d.sock, specs, a.conns, a.window)
        lag1, jobs1 = scrape(port)
        submit_rss = max(r for r, _ in sampler.rss)
        n_rtt_submit = len(sampler.rtt)

        time.sleep(a.run)
        lag2, jobs2 = scrape(port)
        sampler.stop.set()
        sampler.join()
        peak_rss = max(r for r, _ in sampler.rss)
        end_rss, peak_hwm = d.memory()
        run_rtt = sampler.rtt[n_rtt_submit:]

        c = Conn(d.sock)
        restart_at = market_now(c)
        c.close()
        unfinished = sum(n for s, n in jobs2.items()
                         if s not in ("succeeded", "failed", "cancelled",
                                      "budget_exhausted", "deadline_missed"))
        d.kill(signal.SIGKILL)

        # ---- restart on the same state, the clock continuing -------------
        # The same configuration: ebbd's clock resumes where the store's
        # got to (a clock.start moved to restart_at, a little before it,
        # would be refused as running backwards).
        d = Daemon(build, state, config, log)
        t0 = d.started_wall
        answers = wait_answering(d, 600)
        took_t, took_line = wait_log(d, "took back", t0, 600)
        m = re.search(r"took back (\d+) unfinished jobs; (\d+) instances", took_line or "")
        n_back = int(m.group(1)) if m else 0
        n_held = int(m.group(2)) if m else 0
        # Without held instances there is nothing to reconcile (no log line).
        rec_t, rec_line = (wait_log(d, "reconciled", t0, 600) if n_held > 0
                           else (took_t, "reconciled 0 instances"))
        # Every job is in the store: the first complete listing (finished
        # jobs too: jobs keep finishing while the clock runs on).
        c = Conn(d.sock)
        listed = len(c.call("jobs", {"all": True})["jobs"])
        jobs_back = time.monotonic() - d.started
        c.close()
        if listed < a.jobs:
            sys.exit("bench_daemon: `jobs` after the restart listed %d of %d jobs"
                     % (listed, a.jobs))
        time.sleep(a.settle)
        lag3, _ = scrape(port)
        restart_rss, restart_hwm = d.memory()
        d.kill(signal.SIGTERM)
    finally:
        if d.alive():
            d.kill(signal.SIGKILL)

    # ---- figures ------------------------------------------------------------
    n = a.jobs
    kb_per_job = (peak_hwm - base_rss) / n
    lag_submit = lag_delta(lag1, lag0)
    lag_run = lag_delta(lag2, lag1)
    p99_run = lag_quantile(lag_run, 0.99)
    print()
    print("base      empty ebbd answers after %.2f s; after %.0f s: VmRSS %.1f MB, "
          "VmHWM %.1f MB" % (up, a.base_wait, base_rss / 1024, base_hwm / 1024))
    print("submit    %d jobs in %.2f s: %.0f submits/s (%d connections, %d in flight each)"
          % (n, submit_s, n / submit_s, a.conns, a.window))
    print("memory    peak VmHWM %.1f MB (sampled VmRSS max %.1f MB, %.1f MB at the end "
          "of the submits, %.1f MB at the end of the run)" % (
              peak_hwm / 1024, peak_rss / 1024, submit_rss / 1024, end_rss / 1024))
    print("          per job beyond the base: %.1f KB (peak VmHWM - base VmRSS) / %d; "
          "%.1f KB against the base VmHWM" % (kb_per_job, n, (peak_hwm - base_hwm) / n))
    print("jobs      after the submits: %s" % json.dumps(jobs1, sort_keys=True))
    print("          after %.0f s:       %s" % (a.run, json.dumps(jobs2, sort_keys=True)))
    print("lag       (ebb_event_loop_lag_seconds, deltas between scrapes)")
    print("          " + lag_line("idle (base)", lag0))
    print("          " + lag_line("during the submits", lag_submit))
    print("          " + lag_line("while the jobs run", lag_run))
    print("          " + lag_line("restart + %.0f s" % a.settle, lag3))
    print("api rtt   `providers` every %d ms while the jobs run: %d calls, p50 %.2f ms, "
          "p99 %.2f ms, max %.2f ms" % (PROBE_EVERY_S * 1000, len(run_rtt),
                                        1e3 * quantile(run_rtt, 0.5),
                                        1e3 * quantile(run_rtt, 0.99),
                                        1e3 * max(run_rtt) if run_rtt else float("nan")))
    print("restart   SIGKILL with %d unfinished jobs; started again (clock %s):" % (
        unfinished, restart_at))
    print("          socket answers after %.3f s" % answers)
    if took_t is not None:
        print("          took back %d jobs, %d instances held, at %.3f s" % (
            n_back, n_held, took_t - t0))
    if rec_t is not None:
        print("          reconciled %s instances at %.3f s" % (
            re.search(r"reconciled (\d+)", rec_line).group(1), rec_t - t0))
    print("          `jobs` (all: true) first lists all %d jobs at %.3f s" % (n, jobs_back))
    print("          VmRSS %.1f MB, VmHWM %.1f MB %.0f s after" % (
        restart_rss / 1024, restart_hwm / 1024, a.settle))
    print()
    print("targets   KB per job %.1f / %.0f = %.2f; lag p99 while running %.2f ms / %.0f ms "
          "= %.2f" % (kb_per_job, TARGET_KB_PER_JOB, kb_per_job / TARGET_KB_PER_JOB,
                      1e3 * p99_run, 1e3 * TARGET_LAG_P99_S, p99_run / TARGET_LAG_P99_S))
    if rec_t is not None:
        print("reconcile %.3f s from start to \"reconciled\"" % (rec_t - t0))
    if a.state_dir is None:
        shutil.rmtree(work, ignore_errors=True)
    else:
        print("state and log kept in %s" % work)


if __name__ == "__main__":
    try:
        main()
    except (RuntimeError, OSError) as exc:
        sys.exit("bench_daemon: %s" % exc)
