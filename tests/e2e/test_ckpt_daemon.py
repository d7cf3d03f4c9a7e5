#!/usr/bin/env python3
"""ebbd's side of durable checkpoints end to end (docs/stores.md,
docs/agent-protocol.md "Checkpoint transfer (ebbd)", #17): a real ebbd
with an s3:// store on tests/objstore/fake_s3.py (which recomputes every
SigV4 signature, presigned ones included, with botocore), a local
provider whose "agent" (ckpt_agent.py) only enrols and hands its token
over, and this script acting as the agent over the protocol with urllib.

It checks: start fails naming the store and the variables without
credentials; an unknown store is refused at submit; the job document's
store; offer -> uploads (a single PUT and two parts) -> commit -> durable,
the job event and `ebb job show`; the manifest is written last (the
fake's request log); a commit whose object has another size fails and
leaves nothing durable; keep prunes the oldest (manifest deleted first,
objects gone); resume lists newest first; DELETE and the instance's end
abort open uploads; an upload no row recorded (a lost create answer) is
aborted by the sweep at the next start, one in flight is kept; ebbd
SIGKILLed while completing completes after its
restart; the job's end deletes its checkpoints; the store's keys appear
in no answer and no event. Output is TAP; EBBD, EBB and EBB_SOURCE_ROOT
come from the environment.
"""
import hashlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e import EBBD, ROOT, Daemon, FakeS3, Tap, wait_for  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
AKID, SECRET = "AKIDCKPTTEST", "ckpt-secret-" + os.urandom(8).hex()
PART = 64 << 20
EBB_SWEEP_S = 5  # EBB__CKPT_SWEEP_MS

tmp = tempfile.mkdtemp(prefix="ebb-ckpt.")
state = os.path.join(tmp, "state")
config = os.path.join(tmp, "ebb.yaml")
out = os.path.join(tmp, "out")
fstore = os.path.join(tmp, "fstore")
tap = Tap()
ok = tap.ok
ebbd = Daemon(state, ["--config", config])
ebb = ebbd.ebb
daemon = s3 = None


def env(creds=True):
    e = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    e["HOME"] = tmp
    e["AWS_SHARED_CREDENTIALS_FILE"] = os.path.join(tmp, "no-credentials")
    if creds:
        e["AWS_ACCESS_KEY_ID"], e["AWS_SECRET_ACCESS_KEY"] = AKID, SECRET
    return e


def start():
    global daemon
    ebbd.env = env()
    started = ebbd.start()
    daemon = ebbd.proc
    return started


class Agent:
    def __init__(self, job_id):
        with open(os.path.join(out, job_id + ".json")) as f:
            info = json.load(f)
        self.job, self.token, self.base = job_id, info["token"], info["ebbd"]
        self.doc = info["doc"]

    def call(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method)
        req.add_header("Authorization", "Bearer " + self.token)
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, json.loads(r.read() or b"{}")
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"{}")

    def poll(self, seq, until, seconds=30):
        last = [None]

        def look():
            last[0] = self.call("GET", "/v1/agent/checkpoints/%d" % seq)[1]
            return last[0].get("state") in until and last[0]
        return wait_for(look, seconds) or last[0]


def stored_size(n):
    return n + 80 + 16 * max(1, -(-n // (4 << 20)))


def put(url, data):
    req = urllib.request.Request(url, data=data, method="PUT")
    with urllib.request.urlopen(req, timeout=60) as r:
        return r.headers["ETag"]


def offer(agent, name, sizes):
    """Offers files f0.. of the given plaintext sizes; returns (seq, files)."""
    files = [{"path": "f%d.bin" % i, "size": n, "stored_size": stored_size(n)}
             for i, n in enumerate(sizes)]
    status, body = agent.call("POST", "/v1/agent/checkpoints",
                              {"name": name, "kind": "directory", "files": files})
    return status, body, files


def upload(agent, seq, files, short=None):
    """Uploads every file (random bytes of its stored size, or one byte
    less for the file named `short`); returns the commit body."""
    st = agent.poll(seq, ("uploading", "failed"))
    if st.get("state") != "uploading":
        return None, st
    done = []
    for f, u in zip(files, st["files"]):
        n = f["stored_size"] - (1 if f["path"] == short else 0)
        data = os.urandom(n)
        entry = {"path": f["path"], "size": f["size"], "stored_size": f["stored_size"],
                 "sha256": hashlib.sha256(b"plain" + data).hexdigest(),
                 "stored_sha256": hashlib.sha256(data).hexdigest()}
        if "parts" in u:
            entry["parts"] = [{"number": p["number"],
                               "etag": put(p["url"], data[p["offset"]:p["offset"] + p["length"]])}
                              for p in u["parts"]]
        else:
            entry["etag"] = put(u["url"], data)
        done.append(entry)
    return {"files": done, "upload_ms": 1500, "periodic": True, "duration_ms": 700}, st


def checkpoint(agent, name, sizes, short=None):
    status, body, files = offer(agent, name, sizes)
    if status != 202:
        return None, body
    seq = body["id"]
    commit, st = upload(agent, seq, files, short)
    if commit is None:
        return seq, st
    status, body = agent.call("POST", "/v1/agent/checkpoints/%d/commit" % seq, commit)
    if status != 202:
        return seq, body
    return seq, agent.poll(seq, ("durable", "failed"))


def job_show(jid):
    r = ebb("job", "show", jid, "--json")
    try:
        return json.loads(r.stdout)
    except ValueError:
        return {}


def write_config():
    with open(config, "w") as f:
        f.write("""providers:
  sim:
    prices: %s/tests/data/engine/prices_flat.csv
  local: {slots: 4, agent: %s/ckpt_agent.py}
run_on: {sim: local}
agent_api: {listen: 127.0.0.1:0, heartbeat: 1s}
stores:
  ckpt:
    url: s3://ebb-ckpt/pre
    region: us-east-1
    endpoint: http://127.0.0.1:%d
    path_style: true
  files:
    url: file://%s
notify:
  hook: {command: [%s]}
  defaults: [hook]
""" % (ROOT, HERE, s3port, fstore, hook))


def failed_reasons(job_id):
    """The reasons of the job's checkpoint.failed events in the outbox."""
    db = sqlite3.connect(os.path.join(state, "ebb.db"))
    try:
        return [json.loads(b)["reason"] for (b,) in db.execute(
            "SELECT body FROM notify_outbox WHERE job_id = ? AND type = "
            "'checkpoint.failed' ORDER BY seq", (job_id,))]
    finally:
        db.close()


def events(kind):
    """The events the command channel received, of this type."""
    found = []
    for name in os.listdir(out):
        if name.startswith("event-") and name.endswith(".json"):
            with open(os.path.join(out, name)) as f:
                try:
                    ev = json.load(f)
                except ValueError:
                    continue  # being written
            if ev.get("type") == kind:
                found.append(ev)
    return found


def job_spec(name, checkpoint):
    path = os.path.join(tmp, name + ".yaml")
    with open(path, "w") as f:
        f.write("""name: %s
run: [sleep, "600"]
work: 1h
resources: {instance_types: [p3.2xlarge]}
market: spot
env: {OUT: %s}
checkpoint: %s
""" % (name, out, checkpoint))
    return path


try:
    print("1..46")
    os.makedirs(state)
    os.makedirs(out)
    os.chmod(tmp, 0o755)
    os.chmod(out, 0o777)
    # Pages of one upload: the sweep below has to page through them.
    s3 = FakeS3(tmp, "ebb-ckpt", akid=AKID, secret=SECRET, dump=True, page_size=1)
    s3port = s3.port
    # The notification channel: a command that keeps each event (it runs
    # as nobody: `out` is writable by all).
    hook = os.path.join(tmp, "hook.sh")
    with open(hook, "w") as f:
        f.write('#!/bin/sh\ncat > %s/event-"$EBB_EVENT_ID".tmp && '
                'mv %s/event-"$EBB_EVENT_ID".tmp %s/event-"$EBB_EVENT_ID".json\n'
                % (out, out, out))
    os.chmod(hook, 0o755)
    write_config()

    r = subprocess.run([EBBD, "--state-dir", state, "--config", config, "--check"],
                       capture_output=True, text=True, timeout=30, env=env(False))
    ok(r.returncode == 2 and "stores.ckpt" in r.stderr and "AWS_ACCESS_KEY_ID" in r.stderr,
       "without credentials ebbd refuses to start, naming the store and the variables",
       (r.returncode, r.stderr))
    ok(start(), "ebbd starts with an s3:// store")
    r = ebb("submit", job_spec("nostore", "{store: nosuch}"))
    ok(r.returncode == 2 and 'no store named "nosuch"' in r.stderr and "ckpt" in r.stderr
       and "nostore.yaml:7" in r.stderr,
       "an unknown store is refused at submit with file:line and the stores there are",
       r.stderr)

    jid = ebb("submit", job_spec("a", "{store: ckpt, keep: 2}")).stdout.strip()
    ok(wait_for(lambda: os.path.exists(os.path.join(out, jid + ".json")), 60),
       "the job's agent enrols", jid)
    agent = Agent(jid)
    st = agent.doc.get("store", {})
    ok(st.get("name") == "ckpt" and st.get("kind") == "s3" and st.get("encrypt") is True
       and len(st.get("key", "")) == 64 and st.get("key_version") == 1
       and st.get("part_size") == PART and st.get("parallel") == 4
       and agent.doc["checkpoint"]["dir"] == "" and agent.doc["checkpoint"]["keep"] == 2,
       "the job document gives the store, its key and keep", agent.doc)
    ok(SECRET not in json.dumps(agent.doc) and AKID not in json.dumps(agent.doc),
       "the store's credentials are not in the job document")

    # One small file in one PUT and one of two parts.
    seq1, st1 = checkpoint(agent, "step-1", [1000, PART + 100])
    ok(st1.get("state") == "durable" and st1.get("bytes") == 1000 + PART + 100
       and st1.get("upload_ms") == 1500, "offer, upload, commit: durable", st1)
    reqs = s3.requests()
    mkey = "pre/jobs/%s/ckpt/%d-step-1/manifest.json" % (jid, seq1)
    order = [(r["op"], r["key"]) for r in reqs if (r.get("key") or "").startswith(
        "pre/jobs/%s/ckpt/%d-" % (jid, seq1))]
    ok(order and order[-1] == ("PutObject", mkey) and
       ("CompleteMultipartUpload", mkey[:-len("manifest.json")] + "f1") in order and
       order.index(("CompleteMultipartUpload", mkey[:-len("manifest.json")] + "f1")) <
       order.index(("PutObject", mkey)), "the manifest is written last", order)
    ok(all(r.get("style", "").startswith("presigned") for r in reqs
           if r["op"] in ("UploadPart",) or (r["op"] == "PutObject" and
                                             not r["key"].endswith("manifest.json"))),
       "the agent's uploads went through presigned URLs")
    show = job_show(jid)
    ck = show.get("checkpoints", [])
    ok(ck and ck[0].get("name") == "step-1" and ck[0].get("durable") is True and
       ck[0].get("bytes") == 1000 + PART + 100 and ck[0].get("upload_seconds") == 1.5 and
       ck[0].get("store") == "ckpt" and ck[0].get("id") == seq1,
       "ebb job show --json lists the durable checkpoint", ck)
    ok(any("checkpoint stored: step-1" in e["reason"] for e in show.get("events", [])),
       "a job event records it", show.get("events"))
    text = ebb("job", "show", jid).stdout
    ok("Checkpoints (store ckpt):" in text and "step-1" in text and "durable" in text,
       "ebb job show lists it", text)

    # An object one byte short: failed, nothing durable, no manifest.
    seqb, stb = checkpoint(agent, "bad", [5000], short="f0.bin")
    ok(stb.get("state") == "failed" and "size" in stb.get("reason", ""),
       "a commit whose object has another size fails", stb)
    # Its objects are deleted after the row fails, not before.
    ok(wait_for(lambda: not any(k.startswith("pre/jobs/%s/ckpt/%d-bad/" % (jid, seqb))
                                for k in s3.state()["objects"]), 10),
       "the failed checkpoint left no manifest and no object", s3.state()["objects"])
    ok(wait_for(lambda: [e for e in events("checkpoint.failed") if e["job_id"] == jid and
                         "checkpoint bad could not be stored in ckpt: " in e["reason"]
                         and "size" in e["reason"]], 20),
       "a checkpoint.failed notification names the checkpoint, the store and why",
       events("checkpoint.failed"))
    # A final checkpoint the agent could not upload is one too.
    status, _ = agent.call("POST", "/v1/agent/events",
                           {"kind": "checkpoint_skipped", "name": "last",
                            "reason": "the store did not answer"})
    outbox = failed_reasons(jid)
    ok(status == 200 and outbox[1:] == ["final checkpoint last not stored: the store "
                                        "did not answer"],
       "so is a final checkpoint the agent did not store", (status, outbox))
    # And a stored checkpoint the agent refused at resume.
    status, _ = agent.call("POST", "/v1/agent/events",
                           {"kind": "checkpoint_fallback", "name": "step-1",
                            "reason": "f0.bin fails its SHA-256"})
    outbox = failed_reasons(jid)
    ok(status == 200 and outbox[2:] == ["stored checkpoint step-1 refused: f0.bin fails "
                                        "its SHA-256"],
       "so is a stored checkpoint the agent refused", (status, outbox))

    # keep 2: a third durable one prunes the first, manifest first.
    seq2, st2 = checkpoint(agent, "step-2", [2000])
    seq3, st3 = checkpoint(agent, "step-3", [3000])
    ok(st2.get("state") == "durable" and st3.get("state") == "durable",
       "two more are durable", (st2, st3))
    prefix1 = "pre/jobs/%s/ckpt/%d-step-1/" % (jid, seq1)
    ok(wait_for(lambda: not any(k.startswith(prefix1) for k in s3.state()["objects"]), 20),
       "keep: the oldest's objects and manifest are gone", s3.state()["objects"])
    dels = [r["key"] for r in s3.requests() if r["op"] == "DeleteObject" and
            r["key"].startswith(prefix1)]
    ok(dels and dels[0] == prefix1 + "manifest.json" and len(dels) == 3,
       "its manifest was deleted first", dels)
    status, body = agent.call("GET", "/v1/agent/resume")
    ids = [c["id"] for c in body.get("checkpoints", [])]
    ok(status == 200 and ids == [seq3, seq2] and
       all(c["manifest_url"].startswith("http://127.0.0.1") and len(c["files"]) == 1
           for c in body["checkpoints"]), "resume lists the durable ones, newest first",
       body)

    # DELETE aborts an open multipart upload.
    status, body, files = offer(agent, "given-up", [PART + 1])
    seqd = body.get("id")
    agent.poll(seqd, ("uploading",))
    ok(len(s3.state()["uploads"]) == 1, "an offered big file has a multipart upload",
       s3.state())
    status, body = agent.call("DELETE", "/v1/agent/checkpoints/%d" % seqd)
    ok(status == 200 and wait_for(lambda: not s3.state()["uploads"], 20) and
       agent.poll(seqd, ("failed",)).get("state") == "failed",
       "DELETE aborts it", (status, body, s3.state()))

    # Creates whose answers were lost are sent again: the first two uploads
    # are no row's. DELETE aborts the row's own; the sweep at the next
    # start aborts the others, and leaves an upload of a checkpoint in
    # flight, paging through the listing one upload a page.
    s3.set_faults([{"op": "CreateMultipartUpload", "status": 500, "code": "InternalError",
                    "applied": True, "count": 2}])
    status, body, files = offer(agent, "lost-answer", [PART + 1])
    seql = body.get("id")
    agent.poll(seql, ("uploading",))
    ok(len(s3.state()["uploads"]) == 3,
       "lost answers to CreateMultipartUpload, retried, leave three uploads", s3.state())
    agent.call("DELETE", "/v1/agent/checkpoints/%d" % seql)
    lost_key = "pre/jobs/%s/ckpt/%d-lost-answer/f0" % (jid, seql)
    ok(wait_for(lambda: list(s3.state()["uploads"].values()) == [lost_key] * 2, 20),
       "DELETE aborts the upload its row recorded, not the others", s3.state())
    status, body, files = offer(agent, "in-flight", [PART + 1])
    seqf = body.get("id")
    agent.poll(seqf, ("uploading",))
    flight_key = "pre/jobs/%s/ckpt/%d-in-flight/f0" % (jid, seqf)
    daemon.send_signal(signal.SIGKILL)
    daemon.wait()
    ok(start(), "ebbd starts again")
    ok(wait_for(lambda: list(s3.state()["uploads"].values()) == [flight_key], 20),
       "its sweep aborts the upload no checkpoint owns and keeps the one in flight",
       s3.state())
    ok(wait_for(lambda: ebbd.log().count(
        "aborted a multipart upload of jobs/%s/ckpt/%d-lost-answer/f0 that "
        "no checkpoint in flight owns" % (jid, seql)) == 2, 10),
       "and says so in its log, once for each")
    lists = [r["query"] for r in s3.requests() if r["op"] == "ListMultipartUploads"]
    ok(lists and all("prefix=pre%2Fjobs%2F" in q and "max-uploads=1000" in q
                     for q in lists),
       "it listed the uploads under the store's jobs/ only, a page of 1000 at most", lists)
    ok(sum("key-marker=" in q and "upload-id-marker=" in q for q in lists) >= 2,
       "a page at a time, from the markers of the one before", lists)
    agent.call("DELETE", "/v1/agent/checkpoints/%d" % seqf)
    ok(wait_for(lambda: not s3.state()["uploads"], 20), "DELETE aborts the one in flight",
       s3.state())

    # ebbd SIGKILLed while it completes: completed after the restart. An
    # upload in flight meanwhile survives the restart.
    status, body, files = offer(agent, "step-4", [PART + 10])
    seq4 = body["id"]
    commit, _ = upload(agent, seq4, files)
    s3.proc.send_signal(signal.SIGSTOP)
    status, body = agent.call("POST", "/v1/agent/checkpoints/%d/commit" % seq4, commit)
    ok(status == 202 and body.get("state") == "completing", "a commit is accepted (202)",
       body)
    status, body, sfiles = offer(agent, "survivor", [4000])  # a single PUT: no MPU
    seqs = body["id"]
    agent.poll(seqs, ("uploading",))
    time.sleep(0.5)
    daemon.send_signal(signal.SIGKILL)
    daemon.wait()
    s3.proc.send_signal(signal.SIGCONT)
    ok(start(), "ebbd starts again after SIGKILL")
    st4 = agent.poll(seq4, ("durable", "failed"), 60)
    ok(st4.get("state") == "durable", "the completing checkpoint became durable", st4)
    time.sleep(EBB_SWEEP_S + 1)
    commit, sts = upload(agent, seqs, sfiles)
    status, body = agent.call("POST", "/v1/agent/checkpoints/%d/commit" % seqs, commit or {})
    sts = agent.poll(seqs, ("durable", "failed"))
    ok(sts.get("state") == "durable",
       "an upload open across the restart is still taken and made durable", sts)

    # A file:// store: file:///PATH URLs into directories ebbd made for
    # the job (mode 0700), no multipart, encrypt: false allowed here.
    jb = ebb("submit", job_spec("b", "{store: files, encrypt: false}")).stdout.strip()
    ok(wait_for(lambda: os.path.exists(os.path.join(out, jb + ".json")), 60),
       "a job with a file:// store starts", jb)
    bgent = Agent(jb)
    bst = bgent.doc.get("store", {})
    ok(bst.get("kind") == "file" and bst.get("encrypt") is False and
       len(bst.get("key", "")) == 64,
       "its job document says file, unencrypted, with the key its manifests are "
       "authenticated with", bst)
    status, body = bgent.call("POST", "/v1/agent/checkpoints",
                              {"name": "model.pt", "kind": "file", "files": [
                                  {"path": "model.pt", "size": 10, "stored_size": 10}]})
    seqf = body.get("id")
    up = bgent.poll(seqf, ("uploading", "failed"))
    url = (up.get("files") or [{}])[0].get("url", "")
    want = "file://%s/jobs/%s/ckpt/%s-model.pt/f0" % (fstore, jb, seqf)
    ckdir = os.path.dirname(url[len("file://"):])
    ok(url == want and "parts" not in up["files"][0] and
       os.stat(ckdir).st_mode & 0o777 == 0o700 and
       os.stat(os.path.dirname(os.path.dirname(ckdir))).st_mode & 0o777 == 0o700,
       "the upload URL is file:///PATH in a 0700 directory of the job's", (up, want))
    data = b"0123456789"
    with open(url[len("file://"):], "wb") as f:
        f.write(data)
    sha = hashlib.sha256(data).hexdigest()
    status, body = bgent.call("POST", "/v1/agent/checkpoints/%d/commit" % seqf, {
        "files": [{"path": "model.pt", "size": 10, "stored_size": 10, "sha256": sha}],
        "upload_ms": 3})
    stf = bgent.poll(seqf, ("durable", "failed"))
    ok(status == 202 and stf.get("state") == "durable" and
       os.path.exists(os.path.join(ckdir, "manifest.json")),
       "committed: durable, its manifest beside the file", (body, stf))
    status, body = bgent.call("GET", "/v1/agent/resume")
    c = (body.get("checkpoints") or [{}])[0]
    ok(c.get("manifest_url") == "file://" + os.path.join(ckdir, "manifest.json") and
       c.get("files", [{}])[0].get("url") == want, "resume gives file:// URLs", body)
    # The job's user owns its directories there: links put in place of
    # them lead ebbd nowhere.
    victim = os.path.join(tmp, "victim")
    os.mkdir(victim)
    jobdir = os.path.join(fstore, "jobs", jb)
    os.rename(os.path.join(jobdir, "ckpt"), os.path.join(jobdir, "ckpt.real"))
    os.symlink(victim, os.path.join(jobdir, "ckpt"))
    status, body = bgent.call("POST", "/v1/agent/checkpoints",
                              {"name": "m2", "kind": "file", "files": [
                                  {"path": "m2", "size": 1, "stored_size": 1}]})
    st2 = bgent.poll(body.get("id", 0), ("uploading", "failed"))
    ok(st2.get("state") == "failed" and "not a link" in st2.get("reason", "") and
       not os.listdir(victim), "a link in place of the job's ckpt directory is refused",
       (st2, os.listdir(victim)))
    os.unlink(os.path.join(jobdir, "ckpt"))
    os.rename(os.path.join(jobdir, "ckpt.real"), os.path.join(jobdir, "ckpt"))
    status, body = bgent.call("POST", "/v1/agent/checkpoints",
                              {"name": "m3", "kind": "file", "files": [
                                  {"path": "m3", "size": 1, "stored_size": 1}]})
    seq3f = body.get("id", 0)
    up = bgent.poll(seq3f, ("uploading", "failed"))
    d3 = os.path.dirname(up["files"][0]["url"][len("file://"):])
    os.rename(d3, d3 + ".real")
    os.symlink(victim, d3)
    with open(os.path.join(victim, "f0"), "wb") as f:
        f.write(b"x")
    bgent.call("POST", "/v1/agent/checkpoints/%d/commit" % seq3f, {
        "files": [{"path": "m3", "size": 1, "stored_size": 1,
                   "sha256": hashlib.sha256(b"x").hexdigest()}]})
    st3 = bgent.poll(seq3f, ("durable", "failed"))
    ok(st3.get("state") == "failed" and sorted(os.listdir(victim)) == ["f0"],
       "a link in place of a checkpoint's directory: no manifest written through it",
       (st3, os.listdir(victim)))
    open(os.path.join(out, jb + ".exit"), "w").close()

    # The instance's end aborts an upload left open; the job's end
    # deletes its checkpoints.
    status, body, files = offer(agent, "left-open", [PART + 1])
    seqo = body["id"]
    agent.poll(seqo, ("uploading",))
    open(os.path.join(out, jid + ".exit"), "w").close()
    ok(wait_for(lambda: not s3.state()["uploads"], 60),
       "the instance's end aborts its open upload", s3.state())
    ok(wait_for(lambda: not any(k.startswith("pre/jobs/%s/" % jid)
                                for k in s3.state()["objects"]), 60),
       "the job's end deletes its checkpoints from the store", s3.state())
    show = job_show(jid)
    text = json.dumps(show)
    ok(SECRET not in text and AKID not in text and st["key"] not in text,
       "no key or credential in the job's answer and events")
    with open(state + ".log") as f:
        log = f.read()
    ok(SECRET not in log and st["key"] not in log, "nor in ebbd's log")
finally:
    if daemon is not None and daemon.poll() is None:
        daemon.send_signal(signal.SIGTERM)
        try:
            daemon.wait(30)
        except subprocess.TimeoutExpired:
            daemon.kill()
    if s3 is not None:
        s3.proc.send_signal(signal.SIGCONT)
        s3.proc.kill()
    if tap.failures and os.path.exists(state + ".log"):
        with open(state + ".log") as f:
            print("# ebbd's log:\n#   " + f.read()[-6000:].replace("\n", "\n#   "))
    if not tap.failures:
        shutil.rmtree(tmp, ignore_errors=True)
sys.exit(1 if tap.failures else 0)  # the plan came first
