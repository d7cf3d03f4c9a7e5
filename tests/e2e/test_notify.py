#!/usr/bin/env python3
"""Notifications end to end (docs/notify.md, #19): real ebbd, real agents,
a webhook receiver on 127.0.0.1 that verifies every signature.

The receiver (Python's http.server, in this process) checks each POST's
Ebb-Signature (HMAC-SHA256 with the channel's secret over
"<Ebb-Timestamp>.<body>", computed here with Python's hmac), that
Ebb-Timestamp is within five minutes of the wall clock and that
Ebb-Event-Id is the body's "id", and records the ids. Channels:

  audit   webhook, the default: its receiver first answers 500 to
          everything while ebbd is SIGKILLed and started again; then
          every event of the outbox must arrive, with the same ids
  flaky   webhook answering 500 twice per event, then 200: retried,
          delivered on the third attempt
  dead    webhook answering 503 always, max_attempts 3: a dead letter that
          `ebb notifications --failed` shows, and ebbd keeps working
  hang    webhook that answers only after 30 s, timeout 1s, max_attempts
          2: each attempt ends at its timeout, ebbd's API answers meanwhile
  ops     slack: {"text": ...} naming the job
  pager   command: reads the event JSON on stdin

Before ebbd starts: a secret_file others may read is refused with the
reason, and a job naming an unknown channel is refused at submit (exit 2).
Output is TAP; EBBD, EBB and EBB_SOURCE_ROOT come from the environment.
"""
import hashlib
import hmac
import http.server
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e import EBBD, ROOT, Daemon, Tap, wait_for  # noqa: E402

TRAIN = os.path.join(ROOT, "examples", "train.py")

tmp = tempfile.mkdtemp(prefix="ebb-notify.")
state = os.path.join(tmp, "state")
config = os.path.join(tmp, "ebb.yaml")
SECRET = b"s3cret-" + os.urandom(8).hex().encode()
tap = Tap()
ok = tap.ok
ebbd = Daemon(state, ["--config", config])
ebb = ebbd.ebb
daemon = None


# ---- the receiver --------------------------------------------------------

lock = threading.Lock()
got = {"audit": [], "flaky": [], "dead": [], "ops": [], "hang": []}   # (id, body)
bad = []                 # requests whose signature or headers did not hold
audit_down = [True]      # answer 500 to audit while true
flaky_seen = {}          # flaky: requests per event id


class Receiver(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n)
        path = self.path.strip("/")
        code = 200
        with lock:
            if path == "ops":
                got["ops"].append((None, body))
            else:
                ts = self.headers.get("Ebb-Timestamp", "")
                sig = self.headers.get("Ebb-Signature", "")
                eid = self.headers.get("Ebb-Event-Id", "")
                want = "v1=" + hmac.new(SECRET, ts.encode() + b"." + body,
                                        hashlib.sha256).hexdigest()
                try:
                    event = json.loads(body)
                    fresh = abs(time.time() - int(ts)) <= 300
                except ValueError:
                    event, fresh = {}, False
                if not hmac.compare_digest(want, sig) or not fresh or \
                        event.get("id") != eid:
                    bad.append((path, ts, sig, eid, body))
                    code = 400
                else:
                    got[path].append((eid, body))
                if path == "audit" and audit_down[0]:
                    code = 500
                elif path == "flaky":
                    flaky_seen[eid] = flaky_seen.get(eid, 0) + 1
                    code = 500 if flaky_seen[eid] <= 2 else 200
                elif path == "dead":
                    code = 503
        if path == "hang":
            time.sleep(30)  # outside the lock: the others are served meanwhile
        try:
            self.send_response(code)
            self.send_header("Content-Length", "0")
            self.end_headers()
        except OSError:
            pass  # the client gave up (hang's timeout)


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
threading.Thread(target=server.serve_forever, daemon=True).start()
URL = "http://127.0.0.1:%d" % server.server_address[1]


# ---- ebbd ------------------------------------------------------------------

def start():
    global daemon
    started = ebbd.start()
    daemon = ebbd.proc
    return started


def outbox(where="1"):
    db = sqlite3.connect(os.path.join(state, "ebb.db"))
    try:
        return db.execute("SELECT event_id, channel, status, attempts, body,"
                          " type FROM notify_outbox WHERE " + where +
                          " ORDER BY seq").fetchall()
    finally:
        db.close()


def job_state(jid):
    r = ebb("job", "show", jid, "--json")
    try:
        return json.loads(r.stdout)["state"]
    except (ValueError, KeyError, TypeError):
        return None


def write_config(secret_mode):
    key = os.path.join(tmp, "webhook.key")
    with open(key, "wb") as f:
        f.write(SECRET + b"\n")
    os.chmod(key, secret_mode)
    pager = os.path.join(tmp, "pager.sh")
    with open(pager, "w") as f:
        f.write('cat > %s/"$EBB_EVENT_ID.json"\n' % os.path.join(tmp, "pager"))
    hook = "{webhook: %s/%%s, secret_file: %s, backoff: 100ms%%s}" % (URL, key)
    with open(config, "w") as f:
        f.write("""providers:
  sim:
    prices: %s/tests/data/engine/prices_flat.csv
  local: {slots: 4}
run_on: {sim: local}
clock: {start: 2020-01-01T06:00:00Z, speed: 1200}
agent_api: {listen: 127.0.0.1:0, heartbeat: 1s}
notify:
  audit: %s
  flaky: %s
  dead: %s
  hang: %s
  ops: {slack: %s/ops}
  pager: {command: [/bin/sh, %s], run_as: %s}
  defaults: [audit]
""" % (ROOT, hook % ("audit", ""), hook % ("flaky", ""),
       hook % ("dead", ", max_attempts: 3"),
       hook % ("hang", ", timeout: 1s, max_attempts: 2"), URL, pager,
       "nobody"))


def job_spec(name, extra=""):
    path = os.path.join(tmp, name + ".yaml")
    with open(path, "w") as f:
        f.write("""name: %s
run: [python3, %s, --out, %s/%s.json, --steps, "200", --step-sleep, "0.005"]
work: 1h
resources: {instance_types: [p3.2xlarge]}
market: spot
%s""" % (name, TRAIN, tmp, name, extra))
    return path


try:
    print("1..20")
    os.makedirs(state)
    # A secret others may read is refused, with the reason.
    write_config(0o644)
    r = subprocess.run([EBBD, "--state-dir", state, "--config", config],
                       capture_output=True, text=True, timeout=30)
    ok(r.returncode == 2 and "chmod 600" in r.stderr,
       "a group- or world-readable secret_file is refused", r.stderr)

    write_config(0o600)
    # The command runs as nobody when ebbd is root: let it write there.
    os.mkdir(os.path.join(tmp, "pager"))
    os.chmod(os.path.join(tmp, "pager"), 0o777)
    os.chmod(tmp, 0o755)
    ok(start(), "ebbd starts with notify: channels")
    r = ebb("submit", job_spec("unknown", "notify: [nosuch]\n"))
    ok(r.returncode == 2 and 'no channel "nosuch"' in r.stderr,
       "an unknown channel is refused at submit with exit 2",
       (r.returncode, r.stderr))

    # audit is down: events reach it, are refused, stay pending.
    a = ebb("submit", job_spec("a")).stdout.strip()
    ok(wait_for(lambda: len(outbox("channel = 'audit' AND attempts > 0 "
                                   "AND status = 'pending'")) >= 2, 30),
       "job a's events wait in the outbox while audit answers 500")
    daemon.send_signal(signal.SIGKILL)
    daemon.wait()
    pending = outbox("channel = 'audit' AND status = 'pending'")
    ok(len(pending) >= 2, "undelivered events survive the SIGKILL",
       len(pending))
    audit_down[0] = False
    ok(start(), "ebbd starts again")
    b = ebb("submit", job_spec("b", "notify: [flaky, dead, hang, ops, pager]\n"))
    ok(b.returncode == 0, "job b with its own channels is submitted", b.stderr)
    b = b.stdout.strip()
    # While hang's deliveries hang, ebbd's API answers as before.
    slowest = 0.0
    until = time.monotonic() + 6
    while time.monotonic() < until:
        t0 = time.monotonic()
        ebb("status")
        slowest = max(slowest, time.monotonic() - t0)
        time.sleep(0.2)
    ok(slowest < 2, "ebb status answers while a receiver hangs", slowest)
    ok(wait_for(lambda: job_state(a) == "succeeded" and
                job_state(b) == "succeeded", 120), "both jobs succeed",
       (job_state(a), job_state(b)))
    ok(wait_for(lambda: not outbox("status = 'pending' AND channel <> 'dead'"),
                60), "every event but the dead channel's is delivered",
       outbox("status = 'pending'"))

    rows = outbox("channel = 'audit'")
    with lock:
        audit_ids = [i for i, _ in got["audit"]]
        bodies = {}
        for i, body in got["audit"]:
            bodies.setdefault(i, set()).add(body)
    ok(all(r[0] in audit_ids for r in rows) and
       set(audit_ids) == {r[0] for r in rows},
       "every audit event arrived, none unknown", (rows, audit_ids))
    ok(len(audit_ids) > len(rows) and
       all(len(v) == 1 for v in bodies.values()),
       "events sent again after the restart carry the same id and body",
       (len(audit_ids), len(rows)))
    ok(not bad, "every signature, timestamp and event id was valid", bad)
    events = [json.loads(r[4]) for r in rows]
    ok(all(set(e) == {"id", "type", "time", "job_id", "team", "state",
                      "reason", "spent", "currency"} and e["job_id"] == a and
           e["currency"] == "USD" for e in events) and
       events[-1]["state"] == "succeeded",
       "audit's events are job a's, with every field, ending in succeeded",
       events)

    flaky = outbox("channel = 'flaky'")
    ok(flaky and all(r[2] == "delivered" and r[3] == 3 for r in flaky),
       "flaky: 500 twice, then delivered on attempt 3",
       [(r[2], r[3]) for r in flaky])
    ok(wait_for(lambda: all(r[2] == "dead" and r[3] == 3
                            for r in outbox("channel = 'dead'")), 30),
       "dead: three attempts, then a dead letter",
       [(r[2], r[3]) for r in outbox("channel = 'dead'")])
    ok(wait_for(lambda: outbox("channel = 'hang'") and
                all(r[2] == "dead" and r[3] == 2 for r in outbox("channel = 'hang'")), 60),
       "hang: each attempt ends at its 1 s timeout, then a dead letter",
       [(r[2], r[3]) for r in outbox("channel = 'hang'")])
    r = ebb("notifications", "--failed", "--json")
    failed = json.loads(r.stdout)["notifications"] if r.returncode == 0 else []
    ok(failed and all(n["status"] == "dead" and
                      (n["channel"] == "dead" and "503" in n["last_error"] or
                       n["channel"] == "hang") for n in failed) and
       any(n["channel"] == "dead" for n in failed),
       "ebb notifications --failed shows the dead letters", r.stdout + r.stderr)

    with lock:
        slack = [json.loads(body) for _, body in got["ops"]]
    ok(slack and all(set(m) == {"text"} and b in m["text"] for m in slack),
       "slack gets {\"text\": ...} naming the job", slack)
    lines = []
    for name in sorted(os.listdir(os.path.join(tmp, "pager"))):
        with open(os.path.join(tmp, "pager", name)) as f:
            lines.append(json.loads(f.read()))
    want = {r[0] for r in outbox("channel = 'pager'")}
    ok(want and {e["id"] for e in lines} == want and
       all(e["job_id"] == b and
           os.path.exists(os.path.join(tmp, "pager", e["id"] + ".json")) and set(e) == {"id", "type", "time", "job_id",
                                           "team", "state", "reason", "spent",
                                           "currency"} for e in lines),
       "the command gets each event's JSON on stdin", (lines, want))
finally:
    if daemon is not None and daemon.poll() is None:
        daemon.send_signal(signal.SIGTERM)
        try:
            daemon.wait(timeout=30)
        except subprocess.TimeoutExpired:
            daemon.kill()
    server.shutdown()
    if tap.failures:
        print("# state kept in %s" % tmp)
        try:
            with open(state + ".log") as f:
                print("# " + f.read()[-3000:].replace("\n", "\n# "))
        except OSError:
            pass
    else:
        shutil.rmtree(tmp, ignore_errors=True)
sys.exit(1 if tap.failures else 0)  # the plan came first
