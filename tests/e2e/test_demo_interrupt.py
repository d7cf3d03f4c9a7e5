#!/usr/bin/env python3
"""`bash .ci/dev demo` interrupted (#16, the demo): Ctrl-C while the job
runs must not leave the job's processes behind. ebbd leaves running jobs
to their agents when it stops (a restarted ebbd adopts them), so the demo
cancels its job first and says so.

The demo runs on this build (EBB_DEMO_BUILD, nothing installed or built)
in a session of its own; Ctrl-C is SIGINT to that session's process
group, as a terminal sends it. Output is TAP.
"""
import os
import re
import select
import signal
import subprocess
import sys
import time

ROOT = os.environ["EBB_SOURCE_ROOT"]
BUILD = os.environ["EBB_BUILD_ROOT"]
checks = []


def check(name, ok, why=""):
    checks.append(ok)
    print("%s %d - %s" % ("ok" if ok else "not ok", len(checks), name))
    if not ok and why:
        print("#   " + why.replace("\n", "\n#   "))


def job_processes(job_id):
    """Pids of processes whose environment names the job (EBB_JOB_ID)."""
    want = ("EBB_JOB_ID=%s" % job_id).encode()
    pids = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/environ" % pid, "rb") as f:
                if want in f.read().split(b"\0"):
                    pids.append(int(pid))
        except OSError:
            pass
    return pids


env = dict(os.environ, EBB_DEMO_BUILD=BUILD)
demo = subprocess.Popen(["bash", os.path.join(ROOT, ".ci/dev"), "demo"], cwd=ROOT,
                        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                        start_new_session=True)
out = b""
job_id, running = None, False
deadline = time.monotonic() + 90
while time.monotonic() < deadline and not running:
    ready, _, _ = select.select([demo.stdout], [], [], 1)
    if not ready:
        continue
    chunk = os.read(demo.stdout.fileno(), 65536)
    if not chunk:
        break
    out += chunk
    m = re.search(rb"submitted \S+ as (j-[0-9a-f]+)", out)
    job_id = m.group(1).decode() if m else None
    # Running, and its training process has started.
    running = job_id is not None and b" running " in out and bool(job_processes(job_id))
check("the demo submits its job and it runs", running, out.decode(errors="replace")[-2000:])
if running:
    os.killpg(demo.pid, signal.SIGINT)
try:
    rest, _ = demo.communicate(timeout=90)
except subprocess.TimeoutExpired:
    os.killpg(demo.pid, signal.SIGKILL)
    rest, _ = demo.communicate()
out += rest
text = out.decode(errors="replace")
check("Ctrl-C ends the demo (exit 130)", demo.returncode == 130, "exit %s" % demo.returncode)
check("it says it cancels the job", "interrupted: cancelling %s" % job_id in text, text[-1500:])
check("and that nothing of it is left", "no process of it is left" in text, text[-1500:])
left = job_processes(job_id) if job_id else []
check("no process of the job is left", not left,
      "left: " + " ".join(open("/proc/%d/cmdline" % p).read().replace("\0", " ")
                          for p in left if os.path.exists("/proc/%d" % p)))
for pid in left:
    os.kill(pid, signal.SIGKILL)
print("1..%d" % len(checks))
sys.exit(0 if all(checks) else 1)
