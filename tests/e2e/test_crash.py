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

With the argument `restart` it runs the randomized restart test instead
(#16 point 1): ebbd on the built-in configuration (the sim market on the
shipped AWS traces, jobs as local processes, its clock.start, the clock
720 times as fast as the wall clock) with three running jobs is stopped
ROUNDS times (EBB_RESTART_ROUNDS, default 16) at random moments, by
SIGKILL or SIGTERM at random, from a seed it prints (EBB_RESTART_SEED to
repeat one). After each stop: the clock's recorded position never went
back, every job's events and checkpoints are in time order, no job runs
twice, and the store's own check (store_check: integrity, then every
instance that ran billed exactly once, none ending before it started)
passes. Once, a running instance's row is made to miss its launch (as a
SIGKILL between the launch and its commit leaves it): recovery must learn
it from the provider. At the end the jobs are cancelled, ebbd stops
cleanly, and every instance is closed and passes the same check.

Output is TAP. Arguments come from the environment (EBBD, EBB,
EBB_SOURCE_ROOT, EBB_STORE_CHECK) as for the shell tests.
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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e import ROOT, Daemon, Tap  # noqa: E402

TRAIN = os.path.join(ROOT, "examples", "train.py")
ROUNDS = int(os.environ.get("EBB_CRASH_ROUNDS", "50"))
STEPS, SLEEP = 1500, 0.02
JOBS = 3
STORE_CHECK = os.environ.get("EBB_STORE_CHECK", "")

tmp = tempfile.mkdtemp(prefix="ebb-crash.")
DAEMON_ARGS = ["--config", os.path.join(tmp, "ebb.yaml")]
state = os.path.join(tmp, "state")
tap = Tap()
ok = tap.ok
ebbd = Daemon(state, DAEMON_ARGS)
ebb = ebbd.ebb
daemon = None


def start():
    """Starts ebbd with DAEMON_ARGS and waits until it answers."""
    global daemon
    ebbd.args = DAEMON_ARGS
    started = ebbd.start()
    daemon = ebbd.proc
    return started


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


def read_log():
    """ebbd's log as text; a byte that is not UTF-8 fails a check that
    shows where, rather than the test."""
    with open(state + ".log", "rb") as f:
        raw = f.read()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        ok(False, "ebbd's log is UTF-8 text", raw[max(0, e.start - 300):e.end + 100])
        return raw.decode("utf-8", "backslashreplace")


def store_check():
    """The store's own checks (tests/e2e/store_check.c): (passed, words)."""
    r = subprocess.run([STORE_CHECK, os.path.join(state, "ebb.db")],
                       capture_output=True, text=True, timeout=60)
    return r.returncode == 0, (r.stdout + r.stderr).strip()


def out_of_order(db):
    """Jobs whose events or checkpoints, in the order written, go back in
    time: {job: [(seq, at), ...]} from the first step back."""
    bad = {}
    for table, key in (("job_events", "seq"), ("checkpoints", "id")):
        last = {}
        for job, seq, at in db.execute("SELECT job_id, %s, at FROM %s ORDER BY %s"
                                       % (key, table, key)):
            if job in last and at < last[job][1]:
                bad.setdefault(job, []).append((table, last[job], (seq, at)))
            last[job] = (seq, at)
    return bad


def restart_main():
    """The randomized restart test on the built-in configuration."""
    global DAEMON_ARGS
    DAEMON_ARGS = ["--clock-speed", "720"]
    rounds = int(os.environ.get("EBB_RESTART_ROUNDS", "16"))
    seed = int(os.environ.get("EBB_RESTART_SEED", str(random.SystemRandom().randrange(1 << 30))))
    print("# seed %d (EBB_RESTART_SEED=%d repeats it), %d rounds" % (seed, seed, rounds))
    rng = random.Random(seed)
    ok(start(), "ebbd starts on the built-in configuration")
    # Instances start well past clock.start (36 minutes of market time
    # here): a clock put back there on a restart would see them end before
    # they started.
    time.sleep(3)
    ids = []
    for k in range(JOBS):
        # Pinned where the availability trace reclaims spot capacity most
        # (as examples/jobs/demo-train.yaml), so instances come and go
        # between restarts; long enough to outlast the test.
        spec = os.path.join(tmp, "job%d.yaml" % k)
        with open(spec, "w") as f:
            f.write("""name: restart-%d
run: [python3, %s, --out, %s/model%d.json, --steps, "1000000", --step-sleep, "0.01"]
work: 1h
deadline: 48h
resources: {instance_types: [p2.xlarge], zones: [us-east-1c]}
market: spot
checkpoint: {grace: 60s, every: 1h}
""" % (k, TRAIN, tmp, k))
        r = ebb("submit", spec)
        ok(r.returncode == 0, "submit job %d" % k, r.stderr)
        ids.append(r.stdout.strip())

    latest = 0
    forgot = None
    for round_no in range(1, rounds + 1):
        # Mostly short runs; every fourth long enough (an hour of market
        # time is 5 s here) that instances come and go, and that a clock
        # put back to clock.start would land before instances' starts.
        time.sleep(rng.uniform(3.0, 5.0) if round_no % 4 == 0 else rng.uniform(0.2, 2.5))
        how = rng.choice((signal.SIGKILL, signal.SIGTERM))
        daemon.send_signal(how)
        code = daemon.wait(timeout=60)
        name = "round %d (%s)" % (round_no, how.name)
        if how == signal.SIGTERM:
            ok(code == 0, "%s: ebbd stops cleanly" % name, code)
        check_invariants(round_no)
        db = sqlite3.connect(os.path.join(state, "ebb.db"))
        try:
            back = out_of_order(db)
            try:
                row = db.execute("SELECT now_at FROM clock").fetchone()
            except sqlite3.OperationalError:  # a store that keeps no clock
                row = None
        finally:
            db.close()
        at = row[0] if row else 0
        ok(at >= latest and at > 0, "%s: the clock's position never went back" % name,
           "%d after %d" % (at, latest))
        latest = max(latest, at)
        ok(not back, "%s: every job's events and checkpoints are in time order" % name,
           back)
        passed, words = store_check()
        ok(passed, "%s: the store check passes" % name, words)
        live = live_instances()
        if forgot is None and live:
            # What a SIGKILL right after a launch leaves: the instance runs,
            # its row never heard of the launch. Recovery must learn it from
            # the provider and bill it from its start.
            forgot = live[0]["token"]
            db = sqlite3.connect(os.path.join(state, "ebb.db"))
            with db:
                db.execute("UPDATE instances SET state = 'intent', started_at = NULL,"
                           " provider_instance_id = NULL WHERE token = ?", (forgot,))
            db.close()
        if not ok(start(), "%s: ebbd starts again" % name):
            break

    # The end: every job cancelled, every instance released and billed.
    for job_id in ids:
        ebb("cancel", job_id)
    deadline = time.time() + 60
    states = {}
    while time.time() < deadline:
        states = {}
        for job_id in ids:
            r = ebb("job", "show", job_id, "--json")
            states[job_id] = json.loads(r.stdout)["state"] if r.returncode == 0 else "?"
        if all(s in ("succeeded", "failed", "cancelled") for s in states.values()) \
                and not live_instances():
            break
        time.sleep(0.2)
    ok(all(s in ("succeeded", "failed", "cancelled") for s in states.values()),
       "every job has ended", states)
    ok(not live_instances(), "no agent is left")
    daemon.send_signal(signal.SIGTERM)
    ok(daemon.wait(timeout=30) == 0, "ebbd stops cleanly at the end")
    db = sqlite3.connect(os.path.join(state, "ebb.db"))
    try:
        open_rows = db.execute("SELECT count(*) FROM instances WHERE state IN "
                               "('intent', 'launching', 'running', 'terminating')"
                               ).fetchone()[0]
        ran = db.execute("SELECT count(*) FROM instances WHERE ended_at > started_at"
                         ).fetchone()[0]
        mismatched = db.execute(
            "SELECT id, spent_micros, (SELECT coalesce(sum(amount_micros), 0) "
            "FROM ledger l WHERE l.job_id = j.id) AS billed FROM jobs j "
            "WHERE spent_micros <> billed").fetchall()
        back = out_of_order(db)
        learnt = db.execute("SELECT started_at IS NOT NULL AND ended_at > started_at"
                            " AND provider_instance_id IS NOT NULL FROM instances"
                            " WHERE token = ?", (forgot,)).fetchone()
    finally:
        db.close()
    passed, words = store_check()
    log = read_log()
    print("# %d instances ran, %d adopted over %d restarts; %d clean stops" % (
        ran, log.count("adopted"), log.count("took back"), log.count("stopped cleanly")))
    ok(ran > 0, "instances ran", ran)
    ok(log.count("adopted") > 0, "running instances were taken back after restarts")
    ok(log.count("the clock resumes at") > 0, "the clock resumed after restarts")
    ok(open_rows == 0, "every instance row is closed", open_rows)
    ok(forgot is not None and learnt == (1,),
       "an instance whose launch its row missed was taken back from its start",
       (forgot, learnt))
    ok(passed, "every instance's interval and ledger rows pass the store check", words)
    ok(not mismatched, "each job's spend equals its ledger", mismatched)
    ok(not back, "every job's events and checkpoints are in time order", back)
    ok("store check:" not in log, "ebbd's own store check never complained")

    # ebbd's own check at start-up names an instance that breaks the rule.
    db = sqlite3.connect(os.path.join(state, "ebb.db"))
    with db:
        broken = db.execute("SELECT token FROM instances WHERE ended_at > started_at"
                            " LIMIT 1").fetchone()[0]
        db.execute("UPDATE instances SET ended_at = started_at - 60000 WHERE token = ?",
                   (broken,))
    db.close()
    ok(start(), "ebbd starts on the store with a broken instance")
    said = ""
    for _ in range(100):
        said = [l for l in read_log().splitlines() if "store check:" in l]
        if said:
            break
        time.sleep(0.1)
    ok(said and "1 instance not billed exactly once: instance %s ends" % broken in said[0],
       "ebbd's store check at start-up names it", said)
    daemon.send_signal(signal.SIGTERM)
    ok(daemon.wait(timeout=30) == 0, "ebbd stops cleanly")


def main():
    with open(os.path.join(tmp, "ebb.yaml"), "w") as f:
        f.write("""providers:
  sim:
    prices: %s/tests/data/engine/prices_flat.csv
    preempt_after: 1h
    notice_lead: 2m
  local: {slots: 8, disk: shared}
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
    log = read_log()
    print("# %d instances adopted, %d released or closed over %d restarts" % (
        log.count("adopted"), log.count("ended while ebbd was down") +
        log.count("no job wants it"), log.count("took back")))
    ok(log.count("adopted") > 0, "running instances were taken back after restarts")
    ok(open_rows == 0, "every instance row is closed", open_rows)
    ok(not mismatched, "each job's spend equals its ledger", mismatched)
    ok(integrity == "ok", "integrity_check at the end", integrity)


try:
    if sys.argv[1:] == ["restart"]:
        restart_main()
    else:
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
    shutil.rmtree(tmp, ignore_errors=True)
tap.finish()
