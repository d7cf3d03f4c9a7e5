#!/usr/bin/env python3
"""Preemption by checkpoint end to end (docs/budgets.md, #19): real ebbd,
real agents on local instances (run_on: {sim: local}), the sim market.

Team ml's max_gpus (1) is full with a low job (examples/train.py, one
p3.2xlarge: 1 GPU). A high job of the team comes: ebbd asks the low job
to checkpoint and pauses it (state paused, the reason naming the high
job); the high job runs in its place and finishes; the low one resumes
from its checkpoint and finishes with the model of a run never stopped
(train.py is deterministic). ebbd is SIGKILLed while the low job is
paused and started again: the job is taken back paused and still resumes
only after the high one. The team never held more than one instance.
Output is TAP; EBBD, EBB and EBB_SOURCE_ROOT come from the environment.
"""
import getpass
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e import ROOT, Daemon, Tap, end, wait_for  # noqa: E402
from e2e import sql as e2e_sql  # noqa: E402

TRAIN = os.path.join(ROOT, "examples", "train.py")
LOW_STEPS = "4000"

tmp = tempfile.mkdtemp(prefix="ebb-preempt.")
state = os.path.join(tmp, "state")
config = os.path.join(tmp, "ebb.yaml")
tap = Tap()
ok = tap.ok
ebbd = Daemon(state, ["--config", config])
ebb = ebbd.ebb


def sql(query, *args):
    return e2e_sql(state, query, *args)


def job_state(jid):
    j = ebbd.job(jid)
    return j["state"] if j else None


def job_spec(name, steps, sleep, priority):
    path = os.path.join(tmp, name + ".yaml")
    with open(path, "w") as f:
        f.write("""name: %s
run: [python3, %s, --out, %s/%s.json, --steps, "%s", --step-sleep, "%s"]
work: 1h
resources: {instance_types: [p3.2xlarge]}
market: spot
team: ml
priority: %s
checkpoint: {dir: %s/ckpt-%s, grace: 60s}
""" % (name, TRAIN, tmp, name, steps, sleep, priority, tmp, name))
    return path


try:
    with open(config, "w") as f:
        f.write("""providers:
  sim:
    prices: %s/tests/data/engine/prices_flat.csv
  local: {slots: 4}
run_on: {sim: local}
clock: {start: 2020-01-01T06:00:00Z, speed: 1200}
agent_api: {listen: 127.0.0.1:0, heartbeat: 1s}
default_policy: greedy
teams:
  ml:
    members: [%s]
    max_gpus: 1
""" % (ROOT, getpass.getuser()))
    os.makedirs(state)
    ok(ebbd.start(), "ebbd starts")
    r = ebb("submit", job_spec("low", LOW_STEPS, "0.005", "low"))
    ok(r.returncode == 0, "the low job is submitted", r.stderr)
    low = r.stdout.strip()
    # Running under its agent: an instance whose agent never reported is
    # released without a checkpoint (the engine's rule), which is not
    # what this test is about.
    ok(wait_for(lambda: job_state(low) == "running" and
                "job %s: its agent enrolled" % low in ebbd.log(), 60),
       "the low job runs under its agent", job_state(low))
    r = ebb("submit", job_spec("high", "300", "0.005", "high"))
    ok(r.returncode == 0, "the high job is submitted", r.stderr)
    high = r.stdout.strip()

    seen = set()
    max_running = [0]

    def watch():
        s = job_state(low)
        seen.add(s)
        running = sql("SELECT count(*) FROM instances WHERE ended_at IS NULL")[0][0]
        max_running[0] = max(max_running[0], running)
        return s == "paused"
    ok(wait_for(watch, 60, 0.05), "the low job is paused", seen)
    ok("checkpointing" in seen or sql(
        "SELECT count(*) FROM job_events WHERE job_id = ? AND to_state = "
        "'checkpointing'", low)[0][0] >= 1, "through a checkpoint", seen)
    reason = sql("SELECT reason FROM job_events WHERE job_id = ? AND to_state = "
                 "'paused'", low)
    want = ("paused for job %s (priority high), which takes its place in team "
            "ml's quota; resuming when the quota frees" % high)
    ok(reason and reason[0][0] == want, "the reason names the high job", reason)
    ckpts = sql("SELECT count(*) FROM checkpoints WHERE job_id = ?", low)[0][0]
    ok(ckpts >= 1, "its agent reported the checkpoint", ckpts)

    # A crash while it is paused: taken back paused, it still waits for
    # the quota (the high job's instance is adopted) and resumes after.
    ebbd.stop(9)
    ok(ebbd.start(), "ebbd starts again after a SIGKILL")
    ok(job_state(low) == "paused", "the low job is taken back paused", job_state(low))

    ok(ebbd.wait_end(high, 120) == "succeeded", "the high job succeeds",
       job_state(high))
    ok(ebbd.wait_end(low, 180) == "succeeded", "the low job resumes and succeeds",
       job_state(low))
    n_low = sql("SELECT count(*) FROM instances WHERE job_id = ?", low)[0][0]
    # Two at least: before and after the pause (on a loaded machine an
    # agent that enrols too late costs one more launch).
    ok(n_low >= 2, "the low job ran on two instances or more", n_low)
    high_start = sql("SELECT min(requested_at) FROM instances WHERE job_id = ?", high)[0][0]
    high_end = sql("SELECT max(ended_at) FROM instances WHERE job_id = ?", high)[0][0]
    low_first_end = sql("SELECT min(ended_at) FROM instances WHERE job_id = ?", low)[0][0]
    low_again = sql("SELECT max(requested_at) FROM instances WHERE job_id = ?", low)[0][0]
    ok(high_start >= low_first_end and low_again >= high_end,
       "one at a time: high after low's first instance, low again after high",
       (low_first_end, high_start, high_end, low_again))
    overlap = sql("SELECT count(*) FROM instances a JOIN instances b ON a.token < b.token"
                  " WHERE coalesce(a.started_at, a.requested_at) < b.ended_at AND"
                  " coalesce(b.started_at, b.requested_at) < a.ended_at")[0][0]
    ok(overlap == 0 and max_running[0] <= 1, "max_gpus 1 always held",
       (overlap, max_running[0]))
    # The resumed run's model is a never-stopped run's.
    ref = os.path.join(tmp, "ref.json")
    subprocess.run(["python3", TRAIN, "--out", ref, "--steps", LOW_STEPS],
                   check=True, capture_output=True, env=dict(os.environ, EBB_CHECKPOINT_DIR=os.path.join(tmp, "ref-ckpt"), EBB_RESUME_FROM=""))
    with open(ref) as f:
        want_model = json.load(f)
    with open(os.path.join(tmp, "low.json")) as f:
        got_model = json.load(f)
    ok(got_model == want_model, "the low job's model is an unstopped run's")
    events = [r[0] for r in sql("SELECT to_state FROM job_events WHERE job_id = ? "
                                "ORDER BY seq", low)]
    i = events.index("paused")
    ok(events[i + 1] == "launching", "paused until it resumed", events)
finally:
    ebbd.stop()
end(tap, tmp, state + ".log")
