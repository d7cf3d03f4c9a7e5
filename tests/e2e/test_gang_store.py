#!/usr/bin/env python3
"""A gang whose checkpoints travel through a store (docs/gangs.md,
"Checkpoints: one per gang"), end to end: real ebbd, real agents on local
instances with PRIVATE disks (each node's disk dies with it, and no
checkpoint.dir is shared), the live sim market preempting the gang, and
the strict S3 fake as the store `ckpt`.

A 2-node gang of tests/e2e/gang_train.py (restart: whole, checkpoint:
{store: ckpt}) is preempted at least once; each rank stores its own part
of each checkpoint under one name, ebbd records which rank stored which,
the gang resumes through the store with every rank given its own part
(gang_train.py refuses another rank's), and it ends with the model of a
single process running the same steps, bit for bit. The gang's stored
checkpoints are whole (a part per rank under each name), are held with
both parts' bytes, and `keep` counts whole ones. Output is TAP.
"""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e import ROOT, Daemon, FakeS3, Tap, kill_leftovers, wait_for  # noqa: E402
from e2e import sql as e2e_sql  # noqa: E402

TRAIN = os.path.join(ROOT, "tests", "e2e", "gang_train.py")
STEPS = "1500"
tmp = tempfile.mkdtemp(prefix="ebb-gang-store.")
state = os.path.join(tmp, "state")
t = Tap()


def sql(query, *args):
    return e2e_sql(state, query, *args)


def write(path, text):
    with open(path, "w") as f:
        f.write(text)
    return path


s3 = FakeS3(tmp, "ml-ckpt")
t.ok(s3.port > 0, "the S3 fake listens")
prices = write(os.path.join(tmp, "prices.csv"),
               "timestamp_utc,provider,region,zone,instance_type,product,"
               "price_usd_per_hour\n"
               "2020-01-01T00:00:00Z,aws,us-east-1,us-east-1a,p3.16xlarge,"
               "Linux/UNIX,7.344000\n"
               "2020-03-01T00:00:00Z,aws,us-east-1,us-east-1a,p3.16xlarge,"
               "Linux/UNIX,7.344000\n")
config = write(os.path.join(tmp, "ebb.yaml"), """providers:
  sim:
    prices: %s
    preempt_after: 1h
    notice_lead: 2m
  local: {slots: 4, disk: private}
run_on: {sim: local}
clock: {start: 2020-01-01T06:00:00Z, speed: 1200}
agent_api: {listen: 127.0.0.1:0, heartbeat: 1s, gang_timeout: 10m}
default_policy: greedy
stores:
  ckpt:
    url: s3://ml-ckpt/ebb
    region: us-east-1
    endpoint: %s
    path_style: true
""" % (prices, s3.endpoint))
spec = write(os.path.join(tmp, "gang.yaml"), """name: gang-store
run: [python3, %s, --out, %s/gang.json, --steps, "%s", --step-sleep, "0.01"]
work: 2h
nodes: 2
resources: {instance_types: [p3.16xlarge], network: 25Gbps}
gang: {restart: whole}
market: spot
checkpoint: {store: ckpt, grace: 60s, keep: 2}
""" % (TRAIN, tmp, STEPS))
creds = {"AWS_ACCESS_KEY_ID": s3.AKID, "AWS_SECRET_ACCESS_KEY": s3.SECRET,
         "AWS_SHARED_CREDENTIALS_FILE": os.path.join(tmp, "no-credentials")}
d = Daemon(state, ["--config", config], creds)
try:
    ref = os.path.join(tmp, "reference.json")
    r = subprocess.run([sys.executable, TRAIN, "--single", "--nodes", "2", "--out", ref,
                        "--steps", STEPS], capture_output=True, text=True)
    t.ok(r.returncode == 0, "a single process runs the same steps", r.stderr)
    os.makedirs(state)
    t.ok(d.start(), "ebbd starts with the store configured")
    r = d.ebb("submit", spec)
    t.ok(r.returncode == 0, "a 2-node gang with a checkpoint store is accepted", r.stderr)
    jid = r.stdout.strip()
    parts = {}  # (name, rank) -> bytes of every durable part seen while it ran

    def watch():
        for c in (d.job(jid) or {}).get("checkpoints", []):
            if c.get("durable"):
                parts[(c["name"], c.get("rank"))] = c.get("bytes", 0)
        j = d.job(jid)
        return j is not None and j["state"] in ("succeeded", "failed", "cancelled")

    wait_for(watch, 240, 0.3)
    j = d.job(jid) or {}
    t.ok(j.get("state") == "succeeded", "the gang's job succeeds",
         [e["reason"] for e in j.get("events", [])][-6:])
    t.ok(j.get("preemptions", 0) >= 1, "preempted at least once", j.get("preemptions"))
    with open(ref) as f:
        want = f.read()
    out = os.path.join(tmp, "gang.json")
    got = open(out).read() if os.path.exists(out) else ""
    t.ok(got == want, "the model is the single process's, bit for bit", (got, want))

    names = {n for n, _ in parts}
    whole = sorted(n for n in names if (n, 0) in parts and (n, 1) in parts)
    t.ok(whole and all(rank in (0, 1) for _, rank in parts),
         "each rank stored its own part of a checkpoint under one name", parts)
    logs = d.ebb("logs", jid).stdout
    resumed = [ln for ln in logs.splitlines() if "resuming at step" in ln]
    t.ok(any("rank 0 resuming" in ln for ln in resumed) and
         any("rank 1 resuming" in ln for ln in resumed),
         "both ranks resumed from a checkpoint", resumed)
    t.ok("was given rank" not in logs and "resumed at step" not in logs,
         "every rank was given its own part, never another rank's",
         [ln for ln in logs.splitlines() if "given" in ln or "resumed at" in ln])
    manifest_gets = [q for q in s3.requests() if q.get("op") == "GetObject" and
                     (q.get("key") or "").startswith("ebb/jobs/%s/" % jid) and
                     q["key"].endswith("manifest.json") and
                     q.get("style", "").startswith("presigned") and
                     q.get("status") == 200]
    t.ok(len(manifest_gets) >= 2, "each rank's resume read its part's manifest from "
         "the store (the private disks died with the instances)", len(manifest_gets))
    recorded = [p for (p,) in sql("SELECT path FROM checkpoints WHERE job_id = ?", jid)]
    t.ok(recorded and all(p in whole for p in recorded),
         "the engine recorded only whole checkpoints of the gang", (recorded, whole))
    held = [b for (b,) in sql("SELECT bytes FROM checkpoints WHERE job_id = ? AND "
                              "bytes > 0", jid)]
    sums = {n: parts[(n, 0)] + parts[(n, 1)] for n in whole}
    t.ok(held and all(b in sums.values() for b in held) and
         all(b > max(parts[(n, 0)], parts[(n, 1)]) for n, b in sums.items()),
         "a whole checkpoint is held (and billed) with both parts' bytes", (held, sums))
    pruned = sql("SELECT name, rank FROM stored_checkpoints WHERE job_id = ? AND "
                 "reason = 'older than the newest 2'", jid)
    pruned_names = {n for n, _ in pruned}
    t.ok({r for _, r in pruned} == {0, 1} and
         all((n, 0) in pruned and (n, 1) in pruned for n in pruned_names if n in whole),
         "keep: 2 deletes whole checkpoints past the newest two, every rank's part",
         pruned)
    t.ok(wait_for(lambda: not s3.objects("ebb/jobs/%s/" % jid), 30),
         "the finished gang's parts are deleted from the store")
    t.ok(d.stop() == 0, "ebbd stops cleanly")
finally:
    d.stop()
    s3.stop()
    kill_leftovers(tmp)
    shutil.rmtree(tmp, ignore_errors=True)
t.finish()
