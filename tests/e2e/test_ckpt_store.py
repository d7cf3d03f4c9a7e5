#!/usr/bin/env python3
"""Checkpoints that travel through a store (#17), end to end: real ebbd,
real agents on local instances with private disks, the live sim market
preempting every spot instance, and the strict S3 fake (SigV4 recomputed
with botocore) as the store `ckpt`.

  A  examples/train.py is preempted at least twice and ends with the model
     of an uninterrupted run, bit for bit. Each instance's disk dies with
     it, so every resume came through the store: the agent read manifests
     and objects back. No stored object holds plaintext of a checkpoint;
     ebbd's credentials are in no agent's or job's environment or command
     line. The manifest of each checkpoint is written after its objects,
     and a finished job's checkpoints are deleted from the store.
  B  with periodic checkpoints, the newest stored checkpoint comes back
     damaged (the fake flips a byte of the first object read): the agent
     falls back to the previous one, says why, and the model is still
     exact.
  C  the agent is SIGKILLed while an upload is on the wire: that
     checkpoint never becomes durable, the job resumes from the one before
     and still ends with the exact model.

Output is TAP.
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e import ROOT, Daemon, FakeS3, Tap, end, wait_for  # noqa: E402

TRAIN = os.path.join(ROOT, "examples", "train.py")
STEPS, SLEEP = 600, "0.02"
PLAINTEXT = b'"weights"'   # every checkpoint of train.py holds it

t = Tap()
tmp = tempfile.mkdtemp(prefix="ebb-ckpt-store.")
state = os.path.join(tmp, "state")
s3 = FakeS3(tmp, "ml-ckpt")
t.ok(s3.port > 0, "the S3 fake listens")

config = os.path.join(tmp, "ebb.yaml")
with open(config, "w") as f:
    f.write("""providers:
  sim:
    prices: %s/tests/data/engine/prices_flat.csv
    preempt_after: 2h
    notice_lead: 2m
  local: {slots: 4, disk: private}
run_on: {sim: local}
clock: {start: 2020-01-01T06:00:00Z, speed: 1200}
agent_api: {listen: 127.0.0.1:0, heartbeat: 1s, heartbeat_timeout: 3s}
stores:
  ckpt:
    url: s3://ml-ckpt/ebb
    region: us-east-1
    endpoint: %s
    path_style: true
""" % (ROOT, s3.endpoint))
creds = {"AWS_ACCESS_KEY_ID": s3.AKID, "AWS_SECRET_ACCESS_KEY": s3.SECRET,
         "AWS_SHARED_CREDENTIALS_FILE": os.path.join(tmp, "no-credentials")}
d = Daemon(state, ["--config", config], creds)


def reference(name):
    out = os.path.join(tmp, name + "-reference.json")
    subprocess.run([sys.executable, TRAIN, "--out", out, "--steps", str(STEPS)],
                   check=True, capture_output=True)
    return out


def submit(name, checkpoint):
    spec = os.path.join(tmp, name + ".yaml")
    with open(spec, "w") as f:
        f.write("""name: %s
run: [python3, %s, --out, %s/%s.json, --steps, "%d", --step-sleep, "%s"]
work: 8h
resources: {instance_types: [p3.2xlarge]}
market: spot
checkpoint: %s
""" % (name, TRAIN, tmp, name, STEPS, SLEEP, checkpoint))
    r = d.ebb("submit", spec)
    t.ok(r.returncode == 0, "%s is accepted" % name, r.stderr)
    return r.stdout.strip()


def same_file(a, b):
    try:
        with open(a, "rb") as x, open(b, "rb") as y:
            return x.read() == y.read()
    except OSError:
        return False


def job_objects(jid):
    return s3.objects("ebb/jobs/%s/" % jid)


def durable(j):
    return [c for c in (j or {}).get("checkpoints", []) if c.get("durable")]


def environments_of(pattern):
    """The environment and command line of every process matching `pattern`."""
    r = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True)
    seen = []
    for pid in r.stdout.split():
        for what in ("environ", "cmdline"):
            try:
                with open("/proc/%s/%s" % (pid, what), "rb") as f:
                    seen.append(f.read())
            except OSError:
                pass
    return seen


def logs(jid):
    return d.ebb("logs", jid).stdout


t.ok(d.start(), "ebbd starts with the store configured")

# ---- A: resume only through the store ----------------------------------

ref = reference("a")
a = submit("train-a", "{store: ckpt, grace: 60s}")
leaks, plaintext, watched = [], [], {"procs": 0, "objects": 0, "durable": {}}


def watch_a():
    """While A runs: what its processes hold, what the store holds."""
    for blob in environments_of("ebb-agent") + environments_of("train-a.json"):
        watched["procs"] += 1
        if s3.SECRET.encode() in blob or s3.AKID.encode() in blob:
            leaks.append(blob[:200])
    for key, body in job_objects(a).items():
        if not key.endswith("manifest.json"):
            watched["objects"] += 1
            if PLAINTEXT in body:
                plaintext.append(key)
    j = d.job(a)
    # Its checkpoints as listed while it runs: once it has ended, the
    # sweep deletes them (within 5 s).
    for c in durable(j):
        watched["durable"][c["id"]] = c
    return j is not None and j["state"] in ("succeeded", "failed", "cancelled")


wait_for(watch_a, 240, 0.5)
ja = d.job(a) or {}
t.ok(ja.get("state") == "succeeded", "A succeeds", ja.get("state"))
t.ok(ja.get("preemptions", 0) >= 2, "A was preempted at least twice",
     ja.get("preemptions"))
t.ok(same_file(ref, os.path.join(tmp, "train-a.json")),
     "A's model equals the uninterrupted run's, bit for bit")
t.ok(logs(a).count("resuming at step") >= 2, "A resumed from a checkpoint each time")
cks = list(watched["durable"].values())
t.ok(len(cks) >= 2, "A's checkpoints were listed as durable while it ran",
     ja.get("checkpoints"))
t.ok(all(c.get("bytes", 0) > 0 and "upload_seconds" in c and c.get("name")
         for c in cks), "each names its bytes and upload time", cks)
reqs = s3.requests()
# The agent's reads are the presigned ones (ebbd reads with its own keys).
manifest_gets = [r for r in reqs if r.get("op") == "GetObject" and
                 (r.get("key") or "").startswith("ebb/jobs/%s/" % a) and
                 r["key"].endswith("manifest.json") and
                 r.get("style", "").startswith("presigned") and r.get("status") == 200]
t.ok(len(manifest_gets) >= 2, "every resume read its manifest from the store, "
     "through a presigned URL", len(manifest_gets))
order_ok = True
for i, r in enumerate(reqs):
    key = r.get("key") or ""
    if r.get("op") == "PutObject" and key.endswith("/manifest.json") and r["status"] == 200:
        prefix = key[:-len("manifest.json")]
        later = [x for x in reqs[i + 1:] if (x.get("key") or "").startswith(prefix) and
                 x.get("op") in ("PutObject", "UploadPart", "CompleteMultipartUpload")]
        order_ok = order_ok and not later
t.ok(order_ok, "a manifest is written after its checkpoint's objects")
t.ok(watched["objects"] > 0 and not plaintext,
     "the store held checkpoint objects and none holds plaintext",
     (watched, plaintext[:3]))
t.ok(watched["procs"] > 0 and not leaks,
     "ebbd's credentials reach no agent or job", leaks[:1])
t.ok(s3.SECRET not in d.log(), "ebbd's log never shows the secret key")
t.ok(wait_for(lambda: not job_objects(a), 30),
     "a finished job's checkpoints are deleted from the store")
disks = os.path.join(state, "plugins", "local", "disks")
t.ok(wait_for(lambda: not os.path.isdir(disks) or not os.listdir(disks), 30),
     "every instance's private disk is gone with it",
     os.listdir(disks) if os.path.isdir(disks) else "")

# ---- B: a damaged checkpoint, and the one before it ----------------------

s3.set_faults([{"op": "GetObject", "corrupt": True, "key_contains": "/f",
                "count": 1}])
b = submit("train-b", "{store: ckpt, grace: 60s, every: 20m, keep: 3}")
jb = {"state": d.wait_end(b, 240)}
jb = d.job(b) or jb
t.ok(jb.get("state") == "succeeded", "B succeeds", jb.get("state"))
t.ok(same_file(ref, os.path.join(tmp, "train-b.json")),
     "B's model is exact after the fallback")
refused = [e["reason"] for e in jb.get("events", [])
           if e["reason"].startswith("stored checkpoint ") and " refused: " in e["reason"]]
t.ok(len(refused) == 1 and "step-" in refused[0],
     "the fallback is a job event naming the checkpoint and why", refused)
resumed = [e["reason"] for e in jb.get("events", [])
           if e["reason"].startswith("resumed from stored checkpoint")]
t.ok(len(resumed) >= 1, "and the job resumed from a stored checkpoint after it", resumed)
corrupted = [r for r in s3.requests() if r.get("fault") == "corrupt"]
t.ok(len(corrupted) == 1, "the store served one damaged object", corrupted)

# ---- C: the agent dies mid-upload ------------------------------------------

c = submit("train-c", "{store: ckpt, grace: 60s, every: 20m}")
t.ok(wait_for(lambda: len(durable(d.job(c))) >= 1, 120, 0.2),
     "C has a durable checkpoint")
before = {x["name"] for x in durable(d.job(c))}
# The next object put hangs in the fake: the agent is killed meanwhile.
s3.set_faults([{"op": "PutObject", "delay": 8, "key_contains": "/f", "count": 1}])


def upload_on_the_wire():
    with open(s3.faults_path) as f:
        return json.load(f)[0]["count"] == 0


t.ok(wait_for(upload_on_the_wire, 120, 0.05), "an upload of C is in flight")
# Only this test's agents (their --disk lies below tmp): other tests run
# agents of their own beside it.
killed = subprocess.run(["pkill", "-KILL", "-f", "ebb-agent .*" + tmp], capture_output=True)
t.ok(killed.returncode == 0, "its agent is SIGKILLed")
jc = {"state": d.wait_end(c, 240)}
jc = d.job(c) or jc
t.ok(jc.get("state") == "succeeded", "C succeeds", jc.get("state"))
t.ok(same_file(ref, os.path.join(tmp, "train-c.json")), "C's model is exact")
never = [x for x in jc.get("checkpoints", []) if x["name"] not in before and
         not x.get("durable") and x.get("state") != "deleted"]
t.ok(all(not x.get("durable") for x in never),
     "the checkpoint cut short never became durable", never)
started = [e for e in jc.get("events", []) if "resum" in json.dumps(e)]
t.ok(not any(x["name"] in json.dumps(started) for x in never),
     "no start resumed from it", started)

t.ok(d.stop() == 0, "ebbd stops cleanly")
s3.stop()
end(t, tmp, state + ".log")
