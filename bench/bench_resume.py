#!/usr/bin/env python3
"""bench-resume: how fast a preempted job runs again.

ebbd runs at real speed on a flat sim market whose spot instances are
preempted PREEMPT_AFTER seconds after launch (with NOTICE seconds of
notice), instances as local processes under the real ebb-agent, running
examples/train.py. From ebbd's own log (debug level, wall-clock times) it
measures, for each preemption:

  release -> launch   from the moment the instance was released (the job
                      "preempted") to ebbd's launch call for the next one:
                      ebb's own part, the target is under 1 s;
  launch -> running   the local provider starting ebb-agent and the agent
                      starting the job (the provider's own launch time,
                      shown apart).

Usage: bench_resume.py BUILD_DIR [PREEMPTIONS]
"""
import datetime
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
want = int(sys.argv[2]) if len(sys.argv) > 2 else 5
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
tmp = tempfile.mkdtemp(prefix="ebb-bench-resume.")
state = os.path.join(tmp, "state")
env = dict(os.environ, EBB_PLUGIN_PATH=build, EBB_DATA_DIR=os.path.join(root, "data"))

with open(os.path.join(tmp, "ebb.yaml"), "w") as f:
    f.write("""providers:
  sim:
    prices: %s/tests/data/engine/prices_flat.csv
    preempt_after: 12s
    notice_lead: 4s
    launch_latency: 0s
  local: {}
run_on: {sim: local}
clock: {start: 2020-01-01T06:00:00Z}
agent_api: {listen: 127.0.0.1:0, heartbeat: 1s}
""" % root)
with open(os.path.join(tmp, "job.yaml"), "w") as f:
    f.write("""name: bench-resume
run: [python3, %s/examples/train.py, --out, %s/model.json, --steps, "100000", --step-sleep, "0.001"]
work: 24h
resources: {instance_types: [p3.2xlarge]}
market: spot
checkpoint: {grace: 30s}
""" % (root, tmp))

log = open(state + ".log", "w")
ebbd = subprocess.Popen([os.path.join(build, "src", "ebbd"), "--state-dir", state,
                         "--config", os.path.join(tmp, "ebb.yaml"),
                         "--log-level", "debug"], stderr=log, env=env)
ebb = [os.path.join(build, "src", "ebb"), "--state-dir", state]
try:
    for _ in range(100):
        if subprocess.run(ebb + ["status"], capture_output=True, env=env).returncode == 0:
            break
        time.sleep(0.1)
    subprocess.run(ebb + ["submit", os.path.join(tmp, "job.yaml")], check=True,
                   capture_output=True, env=env)
    deadline = time.time() + 60 + 20 * want
    while time.time() < deadline:
        with open(state + ".log") as f:
            if f.read().count("-> preempted") >= want + 1:
                break
        time.sleep(1)
finally:
    ebbd.send_signal(signal.SIGTERM)
    ebbd.wait()

pattern = re.compile(r"^(\S+Z) debug job \S+: (\S+) -> (\S+):")
events = []
with open(state + ".log") as f:
    for line in f:
        m = pattern.match(line)
        if m:
            at = datetime.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S.%fZ")
            events.append((at, m.group(3)))
release, start = [], []
for i, (at, to) in enumerate(events):
    if to != "preempted":
        continue
    nxt = {}
    for at2, to2 in events[i + 1:]:
        nxt.setdefault(to2, at2)
        if to2 == "running":
            break
    if "launching" in nxt and "running" in nxt:
        release.append((nxt["launching"] - at).total_seconds() * 1000)
        start.append((nxt["running"] - nxt["launching"]).total_seconds() * 1000)
shutil.rmtree(tmp, ignore_errors=True)
if not release:
    sys.exit("no preemption was followed by a new instance; see the log above")


def line(name, xs, target=None):
    s = "%-18s n=%d  median %7.1f ms  max %7.1f ms" % (name, len(xs),
                                                     statistics.median(xs), max(xs))
    if target:
        s += "  (target < %d ms: max/target %.3f)" % (target, max(xs) / target)
    print(s)


line("release -> launch", release, 1000)
line("launch -> running", start)
