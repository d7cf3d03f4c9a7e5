#!/usr/bin/env python3
"""The agent end of test_ckpt_daemon.py: the local provider starts it in
place of ebb-agent. It enrols, reads its job document, hands its session
token, ebbd's URL and the document to the test (OUT/<job id>.json, OUT
being the job's env OUT) and then only keeps the instance alive with
heartbeats: the test itself speaks the checkpoint protocol with the
token. When OUT/<job id>.exit appears it reports the job exited (0)."""
import json
import os
import sys
import time
import urllib.request

args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
EBBD = args["--ebbd"]
TOKEN = os.environ["EBB_AGENT_TOKEN"]


def call(method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(EBBD + path, data=data, method=method)
    req.add_header("Authorization", "Bearer " + TOKEN)
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read() or b"{}")


if TOKEN.startswith("enrol:"):
    req = urllib.request.Request(EBBD + "/v1/enrol", data=b"", method="POST")
    req.add_header("Authorization", "Bearer " + TOKEN)
    with urllib.request.urlopen(req, timeout=10) as r:
        TOKEN = json.loads(r.read())["token"]
doc = call("GET", "/v1/agent/job")
out = doc["env"]["OUT"]
me = os.path.join(out, doc["job_id"])
with open(me + ".tmp", "w") as f:
    json.dump({"token": TOKEN, "ebbd": EBBD, "doc": doc}, f)
os.rename(me + ".tmp", me + ".json")
call("POST", "/v1/agent/events", {"kind": "host", "nvidia_smi": False, "gpus": []})
call("POST", "/v1/agent/events", {"kind": "started", "pid": os.getpid()})
for _ in range(3000):  # 10 minutes at most
    if os.path.exists(me + ".exit"):
        break
    try:
        reply = call("POST", "/v1/agent/events", {"kind": "heartbeat"})
    except OSError:  # ebbd restarting
        reply = {}
    if reply.get("command") in ("stop", "release"):
        break
    time.sleep(0.2)
for _ in range(100):
    try:
        call("POST", "/v1/agent/events", {"kind": "exited", "status": 0})
        break
    except OSError:
        time.sleep(0.2)
