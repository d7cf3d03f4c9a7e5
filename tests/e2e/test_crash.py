#!/usr/bin/env python3
"""SIGKILL ebbd at random moments while real jobs run, start it again, and
check after every restart that nothing was lost, doubled or leaked.

Three runs of examples/train.py go through ebbd on the live sim market
(accelerated clock; spot instances preempted an hour of market time after
launch, 3 s of wall time), instances as local processes under the real ebb-agent. ebbd is
killed with SIGKILL ROUNDS times at random points and started again. After
each kill the test checks, from the outside:

  * PRAGMA integrity_check says ok;
  * no job ever has two live instances (state files of the local provider
    whose agent process is alive, per job);
  * every live instance has an instance row that is not closed;
and after each restart that ebbd answers. At the end every job must have
succeeded with a model equal, bit for bit, to an uninterrupted run; no
agent or job process may be left; every instance row is closed; each job's
spend equals the sum of its ledger rows.

Output is TAP. Arguments come from the environment (EBBD, EBB,
EBB_SOURCE_ROOT) as for the shell tests.
"""
import glob
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

EBBD, EBB = os.environ["EBBD"], os.environ["EBB"]
ROOT = os.environ["EBB_SOURCE_ROOT"]
TRAIN = os.path.join(ROOT, "examples", "train.py")
ROUNDS = int(os.environ.get("EBB_CRASH_ROUNDS", "50"))
STEPS, SLEEP = 1500, 0.02
JOBS = 3

tmp = tempfile.mkdtemp(prefix="ebb-crash.")
state = os.path.join(tmp, "state")
checks = failures = 0
daemon = None


def ok(cond, name, detail=""):
    global checks, failures
    checks += 1
    if cond:
        print("ok %d - %s" % (checks, name))
    else:
        failures += 1
        print("not ok %d - %s" % (checks, name))
        if detail:
            print("#   " + str(detail).replace("\n", "\n#   "))
    sys.stdout.flush()
    return cond


def ebb(*args):
    return subprocess.run([EBB, "--state-dir", state] + list(args),
                          capture_output=True, text=True, timeout=60)


def start():
    global daemon
    log = open(state + ".log", "a")
    daemon = subprocess.Popen([EBBD, "--state-dir", state, "--config",
                               os.path.join(tmp, "ebb.yaml")], stderr=log)
    for _ in range(200):
        if ebb("status").returncode == 0:
            return True
        if daemon.poll() is not None:
            return False
        time.sleep(0.05)
    return False


def pid_alive(pid, ticks):
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return fields[0] not in ("Z", "X") and int(fields[19]) == ticks
    except (OSError, IndexError, ValueError):
        return False


def live_instances():
    """The local provider's instances whose agent still runs."""
    live = []
    for path in glob.glob(os.path.join(state, "plugins", "local", "*.json")):
        try:
            with open(path) as f:
                inst = json.load(f)
        except (OSError, ValueError):
            continue
        if pid_alive(inst["pid"], inst["start_ticks"]):
            live.append(inst)
    return live


def check_invariants(round_no):
    db = sqlite3.connect(os.path.join(state, "ebb.db"))
    try:
        integrity = db.execute("PRAGMA integrity_check").fetchone()[0]
        open_rows = {r[0] for r in db.execute(
            "SELECT token FROM instances WHERE state IN "
            "('intent', 'launching', 'running', 'terminating')")}
    finally:
        db.close()
    live = live_instances()
    per_job = {}
    for inst in live:
        per_job.setdefault(inst["job_id"], []).append(inst["token"])
    doubled = {j: t for j, t in per_job.items() if len(t) > 1}
    unknown = [i["token"] for i in live if i["token"] not in open_rows]
    ok(integrity == "ok", "round %d: integrity_check" % round_no, integrity)
    ok(not doubled, "round %d: no job runs twice" % round_no, doubled)
    ok(not unknown, "round %d: every live instance has an open row" % round_no,
       unknown)


def main():
    with open(os.path.join(tmp, "ebb.yaml"), "w") as f:
        f.write("""providers:
  sim:
    prices: %s/tests/data/engine/prices_flat.csv
    preempt_after: 1h
    notice_lead: 2m
  local: {slots: 8}
run_on: {sim: local}
clock: {start: 2020-01-01T06:00:00Z, speed: 1200}
agent_api: {listen: 127.0.0.1:0, heartbeat: 1s}
""" % ROOT)
    ref = os.path.join(tmp, "reference.json")
    ok(subprocess.run(["python3", TRAIN, "--out", ref, "--steps", str(STEPS)],
                      capture_output=True).returncode == 0, "reference run")
    ok(start(), "ebbd starts")
    ids = []
    for k in range(JOBS):
        spec = os.path.join(tmp, "job%d.yaml" % k)
        with open(spec, "w") as f:
            f.write("""name: crash-%d
run: [python3, %s, --out, %s/model%d.json, --steps, "%d", --step-sleep, "%s"]
work: 4h
resources: {instance_types: [p3.2xlarge]}
market: spot
checkpoint: {grace: 60s, every: 30m}
""" % (k, TRAIN, tmp, k, STEPS, SLEEP))
        r = ebb("submit", spec)
        ok(r.returncode == 0, "submit job %d" % k, r.stderr)
        ids.append(r.stdout.strip())

    rng = random.Random(int(os.environ.get("EBB_CRASH_SEED", "7")))
    for round_no in range(1, ROUNDS + 1):
        # Mostly quick kills; every tenth round long enough for the market
        # to preempt instances (an hour of market time is 3 s here).
        time.sleep(4.0 if round_no % 10 == 0 else rng.uniform(0.05, 0.6))
        daemon.send_signal(signal.SIGKILL)
        daemon.wait()
        check_invariants(round_no)
        if not ok(start(), "round %d: ebbd starts again" % round_no):
            break

    states = {}
    deadline = time.time() + 240
    while time.time() < deadline:
        states = {}
        for job_id in ids:
            r = ebb("job", "show", job_id, "--json")
            states[job_id] = json.loads(r.stdout)["state"] if r.returncode == 0 else "?"
        if all(s in ("succeeded", "failed", "cancelled") for s in states.values()):
            break
        time.sleep(0.5)
    ok(all(s == "succeeded" for s in states.values()), "every job succeeds", states)
    for k in range(JOBS):
        model = os.path.join(tmp, "model%d.json" % k)
        same = os.path.exists(model) and open(model).read() == open(ref).read()
        ok(same, "job %d's model equals the uninterrupted run's" % k)
    daemon.send_signal(signal.SIGTERM)
    ok(daemon.wait(timeout=30) == 0, "ebbd stops cleanly")
    ok(not live_instances(), "no agent is left")
    leftover = subprocess.run(["pgrep", "-f", tmp + "/model"], capture_output=True,
                              text=True).stdout.split()
    ok(not leftover, "no job process is left", leftover)
    db = sqlite3.connect(os.path.join(state, "ebb.db"))
    try:
        open_rows = db.execute("SELECT count(*) FROM instances WHERE state IN "
                               "('intent', 'launching', 'running', 'terminating')"
                               ).fetchone()[0]
        mismatched = db.execute(
            "SELECT id, spent_micros, (SELECT coalesce(sum(amount_micros), 0) "
            "FROM ledger l WHERE l.job_id = j.id) AS billed FROM jobs j "
            "WHERE spent_micros <> billed").fetchall()
        integrity = db.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        db.close()
    with open(state + ".log") as f:
        log = f.read()
    print("# %d instances adopted, %d released or closed over %d restarts" % (
        log.count("adopted"), log.count("ended while ebbd was down") +
        log.count("no job wants it"), log.count("took back")))
    ok(log.count("adopted") > 0, "running instances were taken back after restarts")
    ok(open_rows == 0, "every instance row is closed", open_rows)
    ok(not mismatched, "each job's spend equals its ledger", mismatched)
    ok(integrity == "ok", "integrity_check at the end", integrity)


try:
    main()
finally:
    if daemon is not None and daemon.poll() is None:
        daemon.kill()
    for inst in live_instances():
        try:
            os.killpg(inst["pid"], signal.SIGKILL)
        except OSError:
            pass
    subprocess.run(["pkill", "-KILL", "-f", tmp + "/model"], capture_output=True)
    print("1..%d" % checks)
    shutil.rmtree(tmp, ignore_errors=True)
sys.exit(1 if failures else 0)
