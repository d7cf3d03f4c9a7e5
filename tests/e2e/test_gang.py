#!/usr/bin/env python3
"""Gangs end to end (docs/gangs.md, #20): real ebbd, real agents on local
instances (run_on: {sim: local}, each node a process tree with its own
disk), the live sim market, and tests/e2e/gang_train.py, whose two ranks
exchange gradients over TCP at MASTER_ADDR:MASTER_PORT.

1. A 2-node gang (restart: whole) is preempted at least twice (the sim
   preempts a gang's last node an hour after its launch), checkpoints as
   one (every rank's part, one name), resumes together, and ends with the
   model of a single process running the same steps, bit for bit. Each node is
   billed; `ebb job show` lists the nodes with their ranks while it runs.
2. A gang whose node 1 reports another driver version (a fake nvidia-smi)
   is refused before the job starts, released, and says why.
3. A gang whose node 1 never boots (its agent does not start) is released
   once agent_api.gang_timeout has passed, both nodes billed, the reason
   in its events.
4. A gang with restart: replace_lost (gang_train.py's GANG_ELASTIC rejoin)
   loses node 1 (the sim's preempt_after takes a gang's last member) and
   has it replaced while node 0 runs on, at least once, never restarting
   whole, and ends with the single process's model; the lost members and
   their replacements are each billed.
5. A running gang is taken back whole after ebbd is SIGKILLed; one that
   lost node 1 while ebbd was down is released whole after the restart
   (node 0 terminated), never taken back short.
Output is TAP; EBBD, EBB, EBB_AGENT and EBB_SOURCE_ROOT come from the
environment.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e import ROOT, Daemon, Tap, kill_leftovers, sql, wait_for, write  # noqa: E402

TRAIN = os.path.join(ROOT, "tests", "e2e", "gang_train.py")
STEPS = "1500"
tmp = tempfile.mkdtemp(prefix="ebb-gang.")
tap = Tap()
ok = tap.ok


def config(name, extra_local="", gang_timeout="10m", preempt_after="1h", speed=1200):
    prices = write(os.path.join(tmp, "prices.csv"),
                   "timestamp_utc,provider,region,zone,instance_type,product,"
                   "price_usd_per_hour\n"
                   "2020-01-01T00:00:00Z,aws,us-east-1,us-east-1a,p3.16xlarge,"
                   "Linux/UNIX,7.344000\n"
                   "2020-03-01T00:00:00Z,aws,us-east-1,us-east-1a,p3.16xlarge,"
                   "Linux/UNIX,7.344000\n")
    return write(os.path.join(tmp, name + ".yaml"), """providers:
  sim:
    prices: %s
    preempt_after: %s
    notice_lead: 2m
  local: {slots: 4%s}
run_on: {sim: local}
clock: {start: 2020-01-01T06:00:00Z, speed: %d}
agent_api: {listen: 127.0.0.1:0, heartbeat: 1s, gang_timeout: %s}
default_policy: greedy
""" % (prices, preempt_after, extra_local, speed, gang_timeout))


def spec(name, steps, sleep, restart="whole"):
    return write(os.path.join(tmp, name + ".yaml"), """name: %s
run: [python3, %s, --out, %s/%s.json, --steps, "%s", --step-sleep, "%s"]
work: 2h
nodes: 2
resources: {instance_types: [p3.16xlarge], network: 25Gbps}
gang: {restart: %s}
env: {GANG_ELASTIC: "%d"}
market: spot
checkpoint: {dir: %s/ckpt-%s, grace: 60s}
""" % (name, TRAIN, tmp, name, steps, sleep, restart, restart == "replace_lost", tmp,
       name))


def events(state, jid):
    return [r[0] for r in sql(state, "SELECT reason FROM job_events WHERE job_id = ? "
                              "ORDER BY rowid", jid)]


def whole_gang():
    """Part 1: preempted twice, resumed together, bit-identical model."""
    ref = os.path.join(tmp, "reference.json")
    r = subprocess.run([sys.executable, TRAIN, "--single", "--nodes", "2", "--out", ref,
                        "--steps", STEPS], capture_output=True, text=True)
    ok(r.returncode == 0, "a single process runs the same steps", r.stderr)
    state = os.path.join(tmp, "state")
    ebbd = Daemon(state, ["--config", config("ebb")])
    try:
        os.makedirs(state)
        ok(ebbd.start(), "ebbd starts")
        r = ebbd.ebb("submit", spec("gang", STEPS, "0.01"))
        ok(r.returncode == 0, "the 2-node job is submitted", r.stderr)
        jid = r.stdout.strip()

        def two_nodes_listed():
            j = ebbd.job(jid) or {}
            nodes = (j.get("current") or {}).get("nodes") or []
            return len(nodes) == 2 and all(n.get("started") for n in nodes) and nodes
        nodes = wait_for(two_nodes_listed, 120)
        ok(nodes and [n["rank"] for n in nodes] == [0, 1] and
           all(n["addr"] == "127.0.0.1" and n["port"] > 0 for n in nodes),
           "ebb job show lists both nodes, rank order, with their addresses", nodes)
        shown = ebbd.ebb("job", "show", jid)
        ok("node 0:" in shown.stdout and "node 1:" in shown.stdout,
           "ebb job show prints the nodes", shown.stdout)
        ok(ebbd.wait_end(jid, 480) == "succeeded", "the gang's job succeeds",
           ((ebbd.job(jid) or {}).get("state"), events(state, jid)[-12:]))
        j = ebbd.job(jid) or {}
        ok(j.get("preemptions", 0) >= 2, "preempted at least twice", j.get("preemptions"))
        with open(ref) as f:
            want = f.read()
        got = open(os.path.join(tmp, "gang.json")).read() \
            if os.path.exists(os.path.join(tmp, "gang.json")) else ""
        ok(got == want, "the model is the single process's, bit for bit", (got, want))
        for rank in (0, 1):
            d = os.path.join(tmp, "ckpt-gang", "rank-%d" % rank)
            ok(os.path.isdir(d) and any(n.startswith("step-") for n in os.listdir(d)),
               "rank %d kept its own checkpoint parts" % rank,
               os.listdir(os.path.dirname(d)) if os.path.isdir(os.path.dirname(d)) else d)
        ckpts = sql(state, "SELECT path FROM checkpoints WHERE job_id = ?", jid)
        ok(len(ckpts) >= 2, "the gang's whole checkpoints are recorded", ckpts)
        out = ebbd.ebb("logs", jid).stdout
        ok(out.count("resuming at step") >= 4, "both ranks resumed at least twice",
           [l for l in out.splitlines() if "resuming" in l])
        ok("resumed at step" not in out, "never from different steps",
           [l for l in out.splitlines() if "resumed at step" in l])
        attempts = sql(state, "SELECT token, provider_instance_id FROM instances "
                       "WHERE job_id = ? AND provider = 'local'", jid)
        ok(attempts and all(i and i.count(",") == 1 for _, i in attempts),
           "every launch was a gang of two", attempts)
        for token, _ in attempts[:1]:
            rows = sql(state, "SELECT count(*), count(DISTINCT start_at) FROM ledger "
                       "WHERE instance_token = ? AND kind IN ('compute', 'overhead')",
                       token)[0]
            ok(rows[0] >= 2 and rows[0] % 2 == 0,
               "each node of a gang is billed (rows come in pairs)", rows)
    finally:
        ebbd.stop()


def fake_nvidia_smi(bindir):
    """An nvidia-smi whose node 1 (its agent's instance id ends "+1") has
    another driver."""
    return write(os.path.join(bindir, "nvidia-smi"), r"""#!/bin/sh
driver=535.104.05
case "$EBB_LOCAL_INSTANCE" in *+1) driver=550.54.14 ;; esac
case "$1" in
--query-gpu=*)
    fields=${1#--query-gpu=}
    line=""
    for f in $(echo "$fields" | tr ',' ' '); do
        case $f in
        name) v="Tesla V100-SXM2-16GB" ;;
        memory.total) v=16160 ;;
        pcie.link.width.current) v=16 ;;
        pcie.link.gen.current) v=3 ;;
        driver_version) v=$driver ;;
        *) v="[N/A]" ;;
        esac
        line="${line:+$line, }$v"
    done
    echo "$line" ;;
*)
    echo "| NVIDIA-SMI $driver   Driver Version: $driver   CUDA Version: 12.2 |" ;;
esac
""", 0o755)


def refused_gangs():
    """Parts 3 and 2: a node that never boots; a mismatched driver."""
    bindir = os.path.join(tmp, "bin")
    os.makedirs(bindir)
    fake_nvidia_smi(bindir)
    agent = os.environ["EBB_AGENT"]
    wrapper = write(os.path.join(bindir, "agent-wrapper"), """#!/bin/sh
# Node 1 of the job named "partial" never boots.
if [ -e %s/partial-mode ]; then
    case "$EBB_LOCAL_INSTANCE" in *+1) exec sleep 600 ;; esac
fi
exec %s "$@"
""" % (tmp, agent), 0o755)
    state = os.path.join(tmp, "state2")
    cfg = config("ebb2", extra_local=", agent: %s" % wrapper, gang_timeout="3s")
    ebbd = Daemon(state, ["--config", cfg],
                  env={"PATH": bindir + os.pathsep + os.environ.get("PATH", "")})
    try:
        os.makedirs(state)
        ok(ebbd.start(), "ebbd starts with a fake nvidia-smi")
        # The partial gang first: a refused host leaves its offer out for a day.
        write(os.path.join(tmp, "partial-mode"), "")
        r = ebbd.ebb("submit", spec("partial", "50", "0.01"))
        ok(r.returncode == 0, "a gang whose node 1 never boots is submitted", r.stderr)
        jid = r.stdout.strip()
        want = "the gang was not complete within 3 s of the launch"
        ok(wait_for(lambda: any(want in e for e in events(state, jid)), 120),
           "the partial gang is released on time, with why", events(state, jid))
        row = wait_for(lambda: sql(state, "SELECT token, ended_at FROM instances WHERE "
                                   "job_id = ? AND provider = 'local' AND ended_at IS NOT "
                                   "NULL", jid), 30)
        ok(row, "its instance row is closed", row)
        billed = sql(state, "SELECT count(*), coalesce(sum(amount_micros), 0) FROM ledger "
                     "WHERE instance_token = ?", row[0][0])[0] if row else (0, 0)
        ok(billed[0] >= 2 and billed[0] % 2 == 0 and billed[1] > 0,
           "the partial gang is billed, each node", billed)
        ok(ebbd.ebb("cancel", jid).returncode == 0, "the partial gang's job is cancelled")
        os.remove(os.path.join(tmp, "partial-mode"))
        r = ebbd.ebb("submit", spec("mismatch", "50", "0.01"))
        ok(r.returncode == 0, "a gang is submitted", r.stderr)
        jid = r.stdout.strip()
        want = ("the gang's nodes differ: node 1's driver version is 550.54.14, "
                "node 0's 535.104.05")
        ok(wait_for(lambda: any(want in e for e in events(state, jid)), 120),
           "a gang with a mismatched driver is refused, with why", events(state, jid))
        out = ebbd.ebb("logs", jid).stdout
        ok("rank 0 of 2" not in out and "rank 1 of 2" not in out,
           "its job never started on either node", out)
        ok(wait_for(lambda: sql(state, "SELECT count(*) FROM instances WHERE job_id = ? "
                                "AND provider = 'local' AND ended_at IS NULL", jid)[0][0]
                    == 0, 30), "the refused gang is released")
        ok(ebbd.ebb("cancel", jid).returncode == 0, "the refused gang's job is cancelled")
    finally:
        ebbd.stop()


def replaced_node():
    """Part 4: replace_lost."""
    state = os.path.join(tmp, "state3")
    # Slower than the others: a replacement must join within the hour
    # (market time) before preempt_after takes it too, which at 1200x is
    # 3 s of wall time, too little for a suite on 2 busy cores; at 400x
    # node 1 is still lost at least once in the 15 s the training takes.
    ebbd = Daemon(state, ["--config", config("ebb3", speed=400)])
    try:
        os.makedirs(state)
        ok(ebbd.start(), "ebbd starts for replace_lost")
        r = ebbd.ebb("submit", spec("elastic", STEPS, "0.01", "replace_lost"))
        ok(r.returncode == 0, "a replace_lost gang is submitted", r.stderr)
        jid = r.stdout.strip()
        ok(ebbd.wait_end(jid, 480) == "succeeded", "the elastic gang's job succeeds",
           events(state, jid)[-5:])
        ev = events(state, jid)
        lost = [e for e in ev if e.startswith("node 1 lost")]
        ok(len(lost) >= 1, "node 1 was lost and replaced while node 0 ran on", ev)
        ok(any(e.startswith("node 1 replaced") for e in ev),
           "the replacement joined: the gang was whole again", ev)
        tokens = sql(state, "SELECT token FROM instances WHERE job_id = ? AND "
                     "provider = 'local'", jid)
        ok(len(tokens) == 1, "never restarted whole: one launch of the gang", (tokens, ev[-12:]))
        with open(os.path.join(tmp, "reference.json")) as f:
            want = f.read()
        path = os.path.join(tmp, "elastic.json")
        got = open(path).read() if os.path.exists(path) else ""
        ok(got == want, "the model is the single process's, bit for bit", (got, want))
        out = ebbd.ebb("logs", jid).stdout
        ok("rank 1 rejoined at step" in out and "rank 1 joins at step" in out,
           "the newcomer joined at the step its predecessor left",
           [l for l in out.splitlines() if "join" in l])
        if tokens:
            members = sql(state, "SELECT count(*) FROM ledger WHERE instance_token = ? "
                          "AND kind = 'overhead'", tokens[0][0])[0][0]
            # Each member's bill starts with its restart overhead.
            ok(members >= 3, "node 0, the lost member and its replacement are each "
               "billed", members)
    finally:
        ebbd.stop()


def short_after_restart():
    """Part 5: a gang that lost a node while ebbd was down is released
    whole after the restart, never taken back short."""
    state = os.path.join(tmp, "state4")
    ebbd = Daemon(state, ["--config", config("ebb4", preempt_after="0s")])
    try:
        os.makedirs(state)
        ok(ebbd.start(), "ebbd starts for a gang that comes back short")
        r = ebbd.ebb("submit", spec("short", "100000", "0.01"))
        ok(r.returncode == 0, "a long gang is submitted", r.stderr)
        jid = r.stdout.strip()

        def running_gang():
            cur = (ebbd.job(jid) or {}).get("current") or {}
            nodes = cur.get("nodes") or []
            return len(nodes) == 2 and all(n.get("started") for n in nodes) and cur
        cur = wait_for(running_gang, 120)
        ok(cur, "the gang runs", cur)
        # A crash while the gang runs: ebbd takes it back whole, and its
        # agents carry on with their sessions.
        ebbd.stop(9)
        ok(ebbd.start(), "ebbd starts again after a SIGKILL")
        gang_id = (cur or {}).get("instance_id")
        ok(wait_for(lambda: "adopted %s" % gang_id in ebbd.log(), 30),
           "the running gang is taken back whole", gang_id)
        # Rank 0's progress reports, each a learned-speed sample, go on.
        before = (cur or {}).get("speed_samples", 0)
        ok(wait_for(lambda: ((ebbd.job(jid) or {}).get("current") or {}).get(
               "speed_samples", 0) > before, 30),
           "its agents report to the new ebbd with their sessions", before)
        left = "ebb-agent .*disks/%s( |$)" % \
            re.escape(cur["nodes"][0]["instance_id"][len("local-"):]) if cur else "none"
        ok(subprocess.run(["pgrep", "-f", left], capture_output=True).returncode == 0,
           "node 0's agent runs")
        ebbd.stop(9)
        # Node 1's whole process tree goes (its agent leads its group).
        member = cur["nodes"][1]["instance_id"] if cur else "none"
        found = subprocess.run(["pgrep", "-f", "ebb-agent .*disks/%s( |$)" %
                                re.escape(member[len("local-"):])],
                               capture_output=True, text=True)
        pids = found.stdout.split()
        for pid in pids:
            os.killpg(int(pid), 9)
        ok(len(pids) == 1, "node 1's agent is killed while ebbd is down", pids)
        ok(ebbd.start(), "ebbd starts again")
        want = "its instance %s ended while ebbd was down" % (cur or {}).get("instance_id")
        ok(wait_for(lambda: any(want in e for e in events(state, jid)), 30),
           "the gang, short of node 1, is released whole and resumes",
           events(state, jid)[-4:])
        ok(wait_for(lambda: subprocess.run(["pgrep", "-f", left],
                                           capture_output=True).returncode != 0, 30),
           "node 0 is terminated with it")
        ok(ebbd.ebb("cancel", jid).returncode == 0, "the job is cancelled")
    finally:
        ebbd.stop()


try:
    whole_gang()
    refused_gangs()
    replaced_node()
    short_after_restart()
finally:
    kill_leftovers(tmp)
    shutil.rmtree(tmp, ignore_errors=True)
tap.finish()
