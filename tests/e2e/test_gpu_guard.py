#!/usr/bin/env python3
"""The GPU guard end to end (docs/agent.md "Stall guard", #21): real ebbd,
real agents on local instances (run_on: {sim: local}), the sim market.

Two offers: p3.2xlarge, the cheapest per unit of work in the catalog,
whose host is throttled (its fake nvidia-smi reports 10% utilisation and
the job runs 8 times slower there), and p3.8xlarge, dearer, whose host
reports 90%. An agent wrapper plays the host of the type the launch names
(EBB_LOCAL_INSTANCE_TYPE).

- A control job without min_gpu_util starts on the throttled host, sees its
  utilisation in `ebb job show`, the guard off, and stays to the end.
- A job with min_gpu_util: 50 starts there too, is checkpointed and moved
  with the reason in its event ("stalled: GPU utilisation under 50% ..."),
  resumes on p3.8xlarge with the guard on, and ends with the model of a run
  never stopped (train.py is deterministic), sooner and for less than the
  control job.
Output is TAP; EBBD, EBB, EBB_AGENT and EBB_SOURCE_ROOT come from the
environment.
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e import ROOT, Daemon, Tap, end, wait_for, write  # noqa: E402
from e2e import sql as e2e_sql  # noqa: E402

TRAIN = os.path.join(ROOT, "examples", "train.py")
FAKE_SMI = os.path.join(ROOT, "tests", "agent", "fake-nvidia-smi")
STEPS = "800"
THROTTLED, NORMAL = "p3.2xlarge", "p3.8xlarge"

tmp = tempfile.mkdtemp(prefix="ebb-gpu-guard.")
state = os.path.join(tmp, "state")
tap = Tap()
ok = tap.ok


def sql(query, *args):
    return e2e_sql(state, query, *args)


def host_bin(kind, util):
    """A directory with nvidia-smi (the shared fake) reporting `util` %."""
    d = os.path.join(tmp, "bin-" + kind)
    os.makedirs(d)
    os.symlink(FAKE_SMI, os.path.join(d, "nvidia-smi"))
    write(os.path.join(d, "nvidia-smi.util"), "%d\n" % util)
    return d


def world():
    throttled, normal = host_bin("throttled", 10), host_bin("normal", 90)
    wrapper = write(os.path.join(tmp, "agent-wrapper"), """#!/bin/sh
# The host of the launch's instance type: its nvidia-smi first on PATH.
case "$EBB_LOCAL_INSTANCE_TYPE" in
%s) PATH=%s:$PATH ;;
%s) PATH=%s:$PATH ;;
*) echo "agent-wrapper: no instance type for $EBB_LOCAL_INSTANCE" >&2; exit 3 ;;
esac
export PATH
exec %s "$@"
""" % (THROTTLED, throttled, NORMAL, normal, os.environ["EBB_AGENT"]), 0o755)
    rows = ["timestamp_utc,provider,region,zone,instance_type,product,price_usd_per_hour"]
    for day in ("2020-01-01", "2020-03-01"):
        rows.append("%sT00:00:00Z,aws,us-east-1,us-east-1a,%s,Linux/UNIX,0.900000"
                    % (day, THROTTLED))
        rows.append("%sT00:00:00Z,aws,us-east-1,us-east-1a,%s,Linux/UNIX,3.600000"
                    % (day, NORMAL))
    prices = write(os.path.join(tmp, "prices.csv"), "\n".join(rows) + "\n")
    return write(os.path.join(tmp, "ebb.yaml"), """providers:
  sim: {prices: %s}
  local: {slots: 4, agent: %s}
run_on: {sim: local}
clock: {start: 2020-01-01T06:00:00Z, speed: 1200}
agent_api: {listen: 127.0.0.1:0, heartbeat: 1s}
default_policy: greedy
""" % (prices, wrapper))


def spec(name, more=""):
    # The job itself runs 8 times slower on the throttled host.
    run = ('sleep=0.005; [ "$EBB_LOCAL_INSTANCE_TYPE" != %s ] || sleep=0.04; '
           'exec python3 %s --out %s/%s.json --steps %s --step-sleep "$sleep"'
           % (THROTTLED, TRAIN, tmp, name, STEPS))
    return write(os.path.join(tmp, name + ".yaml"), """name: %s
shell: true
run: %s
work: 1h
resources: {instance_types: [%s, %s]}
market: spot
checkpoint: {dir: %s/ckpt-%s, grace: 60s}
%s""" % (name, json.dumps(run), THROTTLED, NORMAL, tmp, name, more))


def current(jid):
    return ((ebbd.job(jid) or {}).get("current")) or {}


def reasons(jid):
    return [r[0] for r in sql("SELECT reason FROM job_events WHERE job_id = ? "
                              "ORDER BY rowid", jid)]


def cost(jid):
    return sql("SELECT coalesce(sum(l.amount_micros), 0) FROM ledger l JOIN instances i "
               "ON l.instance_token = i.token WHERE i.job_id = ?", jid)[0][0]


ebbd = Daemon(state, ["--config", world()])
try:
    os.makedirs(state)
    ok(ebbd.start(), "ebbd starts")
    r = ebbd.ebb("submit", spec("control"))
    ok(r.returncode == 0, "the control job is submitted", r.stderr)
    control = r.stdout.strip()
    cur = wait_for(lambda: current(control).get("gpu_util") is not None and
                   current(control), 60)
    ok(cur and cur["instance_type"] == THROTTLED and cur["gpu_util"] == 10,
       "the control job runs on the throttled host, its utilisation reported", cur)
    ok(cur and cur["gpu_guard"] == "off: the job's spec sets no min_gpu_util" and
       cur["min_gpu_util"] is None and cur["gpu_window_ms"] is None,
       "its GPU guard is off: its spec sets no min_gpu_util", cur)

    r = ebbd.ebb("submit", spec("guarded", "min_gpu_util: 50\n"))
    ok(r.returncode == 0, "the guarded job is submitted", r.stderr)
    guarded = r.stdout.strip()
    want = "stalled: GPU utilisation under 50% for "
    moved = wait_for(lambda: [e for e in reasons(guarded) if e and e.startswith(want)], 60)
    ok(moved, "the guarded job is moved, with why", reasons(guarded))
    ok(moved and "(mean 10%%); checkpointing, moving, leaving spot %s us-east-1a aws out "
       "for 24 h" % THROTTLED in moved[0], "the reason gives the mean and the host left out",
       moved)
    cur = wait_for(lambda: current(guarded).get("instance_type") == NORMAL and
                   current(guarded).get("gpu_util") is not None and current(guarded), 60)
    ok(cur and cur["gpu_guard"] == "on" and cur["gpu_util"] == 90 and
       cur["min_gpu_util"] == 50 and cur["gpu_window_ms"] == 600000,
       "it runs on %s with the guard on" % NORMAL, cur)
    shown = ebbd.ebb("job", "show", guarded).stdout
    ok("GPU guard:   on, moves it after 10m under 50% (GPU utilisation 90%)" in shown,
       "ebb job show prints the guard", shown)
    ok(ebbd.wait_end(guarded, 120) == "succeeded", "the guarded job succeeds",
       reasons(guarded)[-8:])
    ok(current(control).get("instance_type") == THROTTLED,
       "the control job is still on the throttled host", current(control))
    ok(ebbd.wait_end(control, 180) == "succeeded", "the control job succeeds",
       reasons(control)[-8:])
    ok(not any(e and e.startswith("stalled:") for e in reasons(control)),
       "the control job was never moved", reasons(control))
    types = sql("SELECT instance_type FROM instances WHERE job_id = ? ORDER BY rowid",
                guarded)
    ok([t for (t,) in types][:1] == [THROTTLED] and types[-1][0] == NORMAL,
       "the guarded job ran on the throttled host, then on %s" % NORMAL, types)
    ended = {j: sql("SELECT max(ended_at) FROM instances WHERE job_id = ?", j)[0][0]
             for j in (guarded, control)}
    ok(ended[guarded] < ended[control], "the guarded job finished first", ended)
    ok(0 < cost(guarded) < cost(control), "and cost less than the control job",
       (cost(guarded), cost(control)))
    print("# cost: guarded %.4f USD, control %.4f USD" % (cost(guarded) / 1e6,
                                                          cost(control) / 1e6))
    ref = os.path.join(tmp, "ref.json")
    subprocess.run(["python3", TRAIN, "--out", ref, "--steps", STEPS], check=True,
                   capture_output=True,
                   env=dict(os.environ, EBB_CHECKPOINT_DIR=os.path.join(tmp, "ref-ckpt"),
                            EBB_RESUME_FROM=""))
    with open(ref) as f:
        want_model = json.load(f)
    with open(os.path.join(tmp, "guarded.json")) as f:
        ok(json.load(f) == want_model, "the moved job's model is an unstopped run's")
finally:
    ebbd.stop()
end(tap, tmp, state + ".log")
