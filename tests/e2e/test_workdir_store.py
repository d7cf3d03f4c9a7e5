#!/usr/bin/env python3
"""A job's packed workdir kept in its store (#17, docs/stores.md
"Workdirs"), end to end: real ebbd with an s3:// store on the strict S3
fake (tests/objstore/fake_s3.py, every SigV4 signature recomputed with
botocore, presigned GETs included), real ebb submit, and the real
ebb-agent on local instances with private disks.

  A  a job with `workdir:` (a script, a data file and an excluded file)
     and checkpoint.store runs in <disk>/work/<job id> on its instance's
     own disk, sees its files and not the excluded one; the store holds
     PREFIX/workdirs/<sha256> and no plaintext of the script.
  B  the same tar submitted again is not uploaded again: one PutObject.
  C  an object that comes back tampered (a byte flipped) is refused by the
     agent: the job does not start, and says why.
  D  a store that refuses the PUT: ebb submit fails (exit 1) saying why,
     and nothing is submitted.
  G  (before E) an object of the tar's size sealed under another secret
     (ebbd's database made afresh) is replaced, not kept.
  H  (before E) the same with a file:// store: the object is file://
     STORE/workdirs/<sha256>, 0644 in a 0711 directory, sealed.
  F  (before E) the API refuses a store that is not configured, and a
     submit naming a tar the store does not hold.
  E  the sweep: once unused for 7 days, a tar no job that has not ended
     names is deleted from the store; one a running job names is kept.

Output is TAP.
"""
import json
import os
import socket
import sqlite3
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e import ROOT, Daemon, FakeS3, Tap, end, wait_for  # noqa: E402

MARKER = "workdir-marker-" + os.urandom(8).hex()

t = Tap()
tmp = tempfile.mkdtemp(prefix="ebb-workdir-store.")
state = os.path.join(tmp, "state")
s3 = FakeS3(tmp, "ml-ckpt")
t.ok(s3.port > 0, "the S3 fake listens")

config = os.path.join(tmp, "ebb.yaml")
with open(config, "w") as f:
    f.write("""providers:
  sim:
    prices: %s/tests/data/engine/prices_flat.csv
  local: {slots: 4, disk: private}
run_on: {sim: local}
clock: {start: 2020-01-01T06:00:00Z, speed: 60}
agent_api: {listen: 127.0.0.1:0, heartbeat: 1s, heartbeat_timeout: 5s}
stores:
  ckpt:
    url: s3://ml-ckpt/ebb
    region: us-east-1
    endpoint: %s
    path_style: true
  fstore: {url: "file://%s/fstore"}
""" % (ROOT, s3.endpoint, tmp))
creds = {"AWS_ACCESS_KEY_ID": s3.AKID, "AWS_SECRET_ACCESS_KEY": s3.SECRET,
         "AWS_SHARED_CREDENTIALS_FILE": os.path.join(tmp, "no-credentials")}
d = Daemon(state, ["--config", config], creds)

# The project: a script, a data file, and a file workdir_exclude leaves out.
proj = os.path.join(tmp, "proj")
os.makedirs(os.path.join(proj, "code", "data"))
with open(os.path.join(proj, "code", "job.py"), "w") as f:
    f.write("""# %s
import json, os, sys
files = sorted(os.path.join(r, n)[2:] for r, _, ns in os.walk(".") for n in ns)
with open(sys.argv[1], "w") as out:
    json.dump({"cwd": os.getcwd(), "files": files,
               "ckpt": os.environ.get("EBB_CHECKPOINT_DIR"),
               "data": open("data/input.txt").read()}, out)
""" % MARKER)
with open(os.path.join(proj, "code", "data", "input.txt"), "w") as f:
    f.write("the data\n")
with open(os.path.join(proj, "code", "weights.pt"), "w") as f:
    f.write("excluded\n")


def spec(name, then="", store="ckpt"):
    path = os.path.join(proj, name + ".yaml")
    with open(path, "w") as f:
        f.write("""name: %s
run: [sh, -c, "python3 job.py %s/%s.json%s"]
work: 10m
resources: {instance_types: [p3.2xlarge]}
market: on-demand
checkpoint: {dir: ckpt, store: %s}
workdir: code
workdir_exclude: ["*.pt"]
""" % (name, tmp, name, then, store))
    return path


def result(name):
    try:
        with open(os.path.join(tmp, name + ".json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def workdir_puts():
    return [r for r in s3.requests()
            if r.get("op") == "PutObject" and "workdirs/" in (r.get("key") or "")]


t.ok(d.start(), "ebbd starts with the store configured")

# ---- A: the job runs in its unpacked workdir on its own disk -----------------

r = d.ebb("submit", spec("a"))
t.ok(r.returncode == 0, "a job with workdir: and checkpoint.store is accepted", r.stderr)
a = r.stdout.strip()
t.ok(d.wait_end(a, 120) == "succeeded", "A succeeds", d.ebb("logs", a).stdout[-2000:])
out = result("a") or {}
cwd = out.get("cwd", "")
t.ok(cwd.endswith("/work/" + a) and "/disks/" in cwd,
     "A ran in <disk>/work/<job id> on its instance's private disk", cwd)
t.ok(not cwd.startswith(proj), "... not in the directory it was packed from", cwd)
t.ok(out.get("files") == ["data/input.txt", "job.py"],
     "A sees its script and data file, not the excluded one", out.get("files"))
t.ok(out.get("ckpt") == cwd + "/ckpt",
     "its relative checkpoint.dir lies below its unpacked workdir", out.get("ckpt"))
t.ok(not os.path.exists(os.path.join(proj, "code", "ckpt")),
     "... and nothing was made in the directory it was submitted from")
t.ok(out.get("data") == "the data\n", "... with their contents", out.get("data"))
objects = s3.objects("ebb/workdirs/")
a_tar = next(iter(objects), "")
t.ok(len(objects) == 1 and all(len(k) == len("ebb/workdirs/") + 64 for k in objects),
     "the store holds one object, PREFIX/workdirs/<sha256>", list(objects))
t.ok(objects and not any(MARKER.encode() in b or b"the data" in b
                         for b in s3.objects("").values()),
     "no object in the store holds plaintext of the workdir")
t.ok(len(workdir_puts()) == 1, "the tar was PUT once", workdir_puts())
t.ok(s3.SECRET not in d.log(), "ebbd's log never shows the store's secret key")
spool = os.path.join(state, "spool")
t.ok(os.listdir(spool) == [], "the spooled files are removed once stored",
     os.listdir(spool))

# ---- B: the same tar again: not uploaded again ---------------------------------

r = d.ebb("submit", spec("b"))
t.ok(r.returncode == 0, "B (the same tar) is accepted", r.stderr)
b = r.stdout.strip()
t.ok(d.wait_end(b, 120) == "succeeded", "B succeeds", d.ebb("logs", b).stdout[-2000:])
t.ok((result("b") or {}).get("files") == ["data/input.txt", "job.py"],
     "B sees the same files")
t.ok(len(workdir_puts()) == 1, "the same tar submitted twice was PUT once",
     workdir_puts())

# ---- C: a tampered object is refused ------------------------------------------

s3.set_faults([{"op": "GetObject", "corrupt": True, "key_contains": "workdirs/",
                "count": 100}])
r = d.ebb("submit", spec("c"))
t.ok(r.returncode == 0, "C is accepted", r.stderr)
c = r.stdout.strip()


def refused():
    logs = d.ebb("logs", c).stdout
    return logs if "the stored workdir is refused" in logs else None


logs = wait_for(refused, 60, 0.3) or d.ebb("logs", c).stdout
t.ok("cannot start the job: workdir: the stored workdir is refused" in logs,
     "C does not start: the agent refuses the tampered object and says why",
     logs[-2000:])
t.ok(result("c") is None, "C's code never ran")
d.ebb("cancel", c)
s3.set_faults([])

# ---- D: a store that refuses the PUT: nothing is submitted ----------------------

with open(os.path.join(proj, "code", "job.py"), "a") as f:
    f.write("# another tar\n")
s3.set_faults([{"op": "PutObject", "status": 403, "code": "AccessDenied",
                "key_contains": "workdirs/", "count": 10}])
before = len(json.loads(d.ebb("jobs", "--all", "--json").stdout)["jobs"])
r = d.ebb("submit", spec("d"))
t.ok(r.returncode == 1, "D: ebb submit fails when the store refuses the tar",
     (r.returncode, r.stderr))
t.ok("ebbd could not keep the packed workdir in store ckpt" in r.stderr and
     "AccessDenied" in r.stderr, "... saying why", r.stderr)
after = len(json.loads(d.ebb("jobs", "--all", "--json").stdout)["jobs"])
t.ok(after == before, "... and nothing is submitted", (before, after))
s3.set_faults([])
r = d.ebb("submit", spec("d"))
t.ok(r.returncode == 0, "D submitted again once the store takes it", r.stderr)
t.ok(d.wait_end(r.stdout.strip(), 120) == "succeeded", "D succeeds")
tars = sorted(s3.objects("ebb/workdirs/"))
t.ok(len(tars) == 2, "the store holds A's tar and D's", tars)

# ---- H: a file:// store -------------------------------------------------------------

r = d.ebb("submit", spec("h", store="fstore"))
t.ok(r.returncode == 0, "H (a file:// store) is accepted", r.stderr)
h = r.stdout.strip()
t.ok(d.wait_end(h, 120) == "succeeded", "H succeeds", d.ebb("logs", h).stdout[-1500:])
t.ok((result("h") or {}).get("files") == ["data/input.txt", "job.py"],
     "H sees its files in its unpacked workdir", result("h"))
wdir = os.path.join(tmp, "fstore", "workdirs")
names = os.listdir(wdir) if os.path.isdir(wdir) else []
t.ok(len(names) == 1 and len(names[0]) == 64, "the store holds workdirs/<sha256>", names)
if names:
    obj = os.path.join(wdir, names[0])
    t.ok(os.stat(wdir).st_mode & 0o777 == 0o711 and os.stat(obj).st_mode & 0o777 == 0o644,
         "... 0644 in a 0711 directory", (oct(os.stat(wdir).st_mode), oct(os.stat(obj).st_mode)))
    with open(obj, "rb") as f:
        t.ok(MARKER.encode() not in f.read(), "... sealed: no plaintext of the script")

# ---- F: what the API refuses ------------------------------------------------------


def api(method, params):
    c = socket.socket(socket.AF_UNIX)
    c.connect(os.path.join(state, "ebb.sock"))
    c.sendall(json.dumps({"id": 1, "method": method, "params": params}).encode() + b"\n")
    c.shutdown(socket.SHUT_WR)
    answer = json.loads(c.makefile().readline())
    c.close()
    return answer.get("result") or answer.get("error")


unknown = "0" * 64
r = api("workdir_put", {"sha256": unknown, "size": 10, "store": "nosuch"})
t.ok(r.get("code") == "bad_request" and "nosuch is not one" in r.get("message", ""),
     "workdir_put naming a store that is not configured is refused", r)
r = api("submit", {"file": "f.yaml", "yaml": open(spec("f")).read(), "workdir": proj,
                   "workdir_archive": {"sha256": unknown, "size": 10}})
t.ok(r.get("code") == "invalid" and "store ckpt does not hold the packed workdir "
     "000000000000" in r.get("message", ""),
     "a submit naming a tar the store does not hold is refused", r)

# ---- G: an object sealed under another secret is replaced ------------------------

d_tar = [k for k in tars if k != a_tar][0]


def puts_of(key):
    return len([p for p in workdir_puts() if p.get("key") == key and p.get("status") == 200])


t.ok(puts_of(d_tar) == 1, "D's tar was PUT once")
t.ok(d.stop() == 0, "ebbd stops")
db = sqlite3.connect(os.path.join(state, "ebb.db"))
with db:  # a new secret, and no record of D's tar: as a database made afresh
    db.execute("DELETE FROM workdir_secret")
    db.execute("DELETE FROM stored_workdirs WHERE sha256 = ?", (d_tar[-64:],))
db.close()
t.ok(d.start(), "ebbd starts without its workdir secret")
r = d.ebb("submit", spec("g"))
t.ok(r.returncode == 0, "G (D's tar) is accepted", r.stderr)
t.ok(d.wait_end(r.stdout.strip(), 120) == "succeeded",
     "G succeeds: its agent opened the tar under the new key",
     d.ebb("logs", r.stdout.strip()).stdout[-1500:])
t.ok(puts_of(d_tar) == 2 and "that is not it (sealed under another key); replacing it"
     in d.log(), "the object of the same size under the old key was replaced",
     (puts_of(d_tar), d.log()[-1500:]))

# ---- E: the sweep of unused tars ------------------------------------------------

r = d.ebb("submit", spec("e", "; sleep 600"))
t.ok(r.returncode == 0, "E (D's tar, running long) is accepted", r.stderr)
e = r.stdout.strip()
t.ok(wait_for(lambda: result("e") is not None, 60, 0.2), "E runs")
t.ok(d.stop() == 0, "ebbd stops")
db = sqlite3.connect(os.path.join(state, "ebb.db"))
with db:
    db.execute("UPDATE stored_workdirs SET used_at = used_at - 8 * 86400 * 1000")
db.close()
t.ok(d.start(), "ebbd starts again, its tars last used 8 days ago")
left = wait_for(lambda: len(s3.objects("ebb/workdirs/")) == 1 and
                sorted(s3.objects("ebb/workdirs/")), 30, 0.3)
t.ok(left and left[0] in tars and left[0] != a_tar,
     "the sweep deleted the tar only ended jobs named, and kept the one E runs",
     (left, tars, a_tar))
t.ok("deleted from store ckpt: no job used it for 7 days" in d.log(),
     "... and said so in ebbd's log")
d.ebb("cancel", e)

t.ok(d.stop() == 0, "ebbd stops cleanly")
s3.stop()
end(t, tmp, state + ".log")
