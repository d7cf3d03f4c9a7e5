#!/usr/bin/env python3
"""A stand-in for ebb-agent that speaks docs/agent-protocol.md, for testing
ebbd's side of it (the real agent has its own tests in tests/agent).

The "job" is simulated here: it advances its progress by 10% every 1.5 s,
checkpoints into EBB_CHECKPOINT_DIR (a file holding the fraction), resumes
from the newest checkpoint, and stops with a checkpoint on an IMDS notice
or ebbd's stop. It first trades its one-time enrolment token for a session
token (POST /v1/enrol), then makes one request with a wrong token, which
ebbd must refuse (the test checks ebbd's log)."""
import json
import os
import sys
import time
import urllib.error
import urllib.request

args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
EBBD = args["--ebbd"]
META = args.get("--metadata", "")
TOKEN = os.environ["EBB_AGENT_TOKEN"]


def call(method, path, body=None, token="session", base=EBBD, headers=None):
    if token == "session":
        token = TOKEN
    data = None if body is None else (body if isinstance(body, bytes)
                                      else json.dumps(body).encode())
    req = urllib.request.Request(base + path, data=data, method=method)
    if token is not None:
        req.add_header("Authorization", "Bearer " + token)
    for k, v in (headers or {}).items():
        req.add_header(k, v)
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def event(kind, **fields):
    fields["kind"] = kind
    status, body = call("POST", "/v1/agent/events", fields)
    if status != 200:
        sys.exit("event %s refused: %d %s" % (kind, status, body))
    return json.loads(body)


if TOKEN.startswith("enrol:"):
    status, body = call("POST", "/v1/enrol", b"")
    if status != 200:
        sys.exit("enrolment refused: %d %s" % (status, body))
    TOKEN = json.loads(body)["token"]
call("GET", "/v1/agent/job", token=TOKEN + "x")  # refused: wrong token
status, body = call("GET", "/v1/agent/job")
if status != 200:
    sys.exit("job document refused: %d" % status)
job = json.loads(body)
print("workdir %s" % job.get("workdir", ""), flush=True)
# The instance's own disk (local's disk: private): the "job" leaves files,
# a directory it may not write, and links out of the disk, to a file and
# to a directory, all of which ebbd removes without following a link.
DISK = args.get("--disk")
if DISK:
    st = os.stat(DISK)
    print("disk %s %o %d" % (DISK, st.st_mode & 0o7777, st.st_uid), flush=True)
    os.makedirs(os.path.join(DISK, "scratch/deep"), exist_ok=True)
    with open(os.path.join(DISK, "scratch/deep/data"), "w") as f:
        f.write("scratch")
    os.chmod(os.path.join(DISK, "scratch/deep"), 0o500)
    os.symlink("../..", os.path.join(DISK, "up"))
    token = os.path.basename(DISK)
    os.symlink("../../%s.agent.log" % token, os.path.join(DISK, "log-link"))
else:
    print("no disk", flush=True)
# As ebb-agent chooses: the job's own dir, else the instance's disk, else
# where ebbd says.
ckdir = job["checkpoint"]["dir"] or (
    os.path.join(DISK, "checkpoints", job["job_id"]) if DISK
    else job["checkpoint"]["default_dir"])
os.makedirs(ckdir, exist_ok=True)
done = [f for f in sorted(os.listdir(ckdir)) if not f.startswith(".")]
fraction = float(open(os.path.join(ckdir, done[-1])).read()) if done else 0.0
imds_token = None
if META:
    s, t = call("PUT", "/latest/api/token", base=META,
                headers={"X-aws-ec2-metadata-token-ttl-seconds": "60"})
    imds_token = t.decode() if s == 200 else None

# The host check: a job whose argv holds --host-pcie-x1 "finds" its GPU on
# a PCIe x1 link, which ebbd must refuse.
if "--host-pcie-x1" in job["argv"]:
    reply = event("host", nvidia_smi=True, gpus=[
        {"model": "Tesla V100-SXM2-16GB", "memory_mb": 16160, "pcie_width": 1,
         "pcie_gen": 3}])
    if reply.get("command") == "release":
        sys.exit(4)
else:
    event("host", nvidia_smi=False, gpus=[])
print("checkpoints %s" % ckdir, flush=True)
print("resume %s" % (done[-1] if done else "none"), flush=True)
event("started", pid=os.getpid(), resume_from=done[-1] if done else "")
call("POST", "/v1/agent/log?stream=stdout",
     ("fake job %s resumes at %.1f\n" % (job["job_id"], fraction)).encode())


def checkpoint():
    name = "ckpt-%03d" % round(fraction * 100)
    tmp = os.path.join(ckdir, ".tmp-" + name)
    with open(tmp, "w") as f:
        f.write("%.2f" % fraction)
    os.rename(tmp, os.path.join(ckdir, name))
    event("checkpoint", path=os.path.join(ckdir, name), fraction=fraction,
          periodic=False, duration_ms=1)


# The stall guard: a job whose argv holds --stall-at F hangs at F when it
# starts afresh (no checkpoint to resume from): the agent stays alive and
# heartbeats, the work stops growing.
argv = job["argv"]
stall_at = float(argv[argv.index("--stall-at") + 1]) if "--stall-at" in argv else None
while fraction < 0.999:
    time.sleep(1.5)
    if stall_at is not None and not done and fraction >= stall_at - 1e-9:
        reply = event("heartbeat")
    else:
        fraction = min(1.0, fraction + 0.1)
        reply = event("progress", fraction=fraction)
    notice = False
    if imds_token:
        s, _ = call("GET", "/latest/meta-data/spot/instance-action", token=None,
                    base=META, headers={"X-aws-ec2-metadata-token": imds_token})
        notice = s == 200
    if notice or reply.get("command") == "stop":
        checkpoint()
        if notice:
            event("notice", deadline_ms=0, source="aws-imds")
        event("exited", status=0, signal=0, stopped=True, checkpointed=True)
        sys.exit(0)
call("POST", "/v1/agent/log?stream=stdout", b"fake job finished\n")
event("exited", status=0, signal=0, stopped=False, checkpointed=False)
