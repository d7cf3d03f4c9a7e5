"""What the Python end-to-end tests share: TAP output, ebb and ebbd runs,
polling with a bound, reading ebbd's store, the end of a test, and the
strict S3 fake (tests/objstore/fake_s3.py).

EBBD, EBB and EBB_SOURCE_ROOT come from the environment (meson sets them).
"""
import atexit
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time

EBBD, EBB = os.environ["EBBD"], os.environ["EBB"]
ROOT = os.environ["EBB_SOURCE_ROOT"]
FAKE_S3 = os.path.join(ROOT, "tests", "objstore", "fake_s3.py")

# The ebbd and fake store processes a test started, ended when it exits,
# however it ends: one left running after a test crashed holds meson's
# pipe, and the whole suite waits for it.
_STARTED = []


def _end_started():
    for proc in _STARTED:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


atexit.register(_end_started)


class Tap:
    """Numbered TAP checks; finish() prints the plan and exits."""

    def __init__(self):
        self.checks = self.failures = 0

    def ok(self, cond, name, detail=""):
        self.checks += 1
        print("%s %d - %s" % ("ok" if cond else "not ok", self.checks, name))
        if not cond:
            self.failures += 1
            if detail:
                print("#   " + str(detail).replace("\n", "\n#   "))
        sys.stdout.flush()
        return cond

    def plan(self):
        print("1..%d" % self.checks)
        sys.stdout.flush()

    def finish(self):
        self.plan()
        sys.exit(1 if self.failures else 0)


def write(path, text, mode=0o644):
    """Writes `text` to `path` with `mode`; returns the path."""
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)
    return path


def sql(state, query, *args):
    """The rows of `query` on the store of ebbd's state directory `state`."""
    db = sqlite3.connect(os.path.join(state, "ebb.db"))
    try:
        return db.execute(query, args).fetchall()
    finally:
        db.close()


def kill_leftovers(tmp):
    """Kills the processes whose command line names a path in `tmp`: the
    agents of local instances that outlive ebbd (as they do by design)."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                if (tmp.rstrip("/") + "/").encode() in f.read():
                    os.kill(int(pid), 9)
        except OSError:
            pass


def end(tap, tmp, log):
    """Prints the plan; on a failure keeps `tmp` and prints the end of the
    file `log` (ebbd's), else removes `tmp`; exits with the result. Either
    way nothing the test started is left running."""
    kill_leftovers(tmp)
    tap.plan()
    if tap.failures:
        print("# state kept in %s" % tmp)
        try:
            with open(log, errors="replace") as f:
                print("# " + f.read()[-3000:].replace("\n", "\n# "))
        except OSError:
            pass
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(1 if tap.failures else 0)


def wait_for(cond, seconds, step=0.1):
    """Polls cond() until it is true or `seconds` have passed; its last value."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        value = cond()
        if value:
            return value
        time.sleep(step)
    return cond()


class Daemon:
    """One ebbd on a state directory of its own, and the ebb CLI for it."""

    def __init__(self, state, args, env=None):
        """`args`: ebbd's arguments after --state-dir (["--config", F])."""
        self.state, self.args = state, list(args)
        self.env = dict(os.environ, **(env or {}))
        self.proc = None

    def ebb(self, *args):
        # The CLI gets the test's environment, not ebbd's extra variables.
        return subprocess.run([EBB, "--state-dir", self.state] + list(args),
                              capture_output=True, text=True, timeout=60)

    def start(self):
        log = open(self.state + ".log", "a")
        self.proc = subprocess.Popen([EBBD, "--state-dir", self.state] + self.args,
                                     stderr=log, env=self.env)
        _STARTED.append(self.proc)
        log.close()
        return wait_for(lambda: self.ebb("status").returncode == 0 or
                        self.proc.poll() is not None, 20) and \
            self.proc.poll() is None

    def stop(self, sig=15):
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()

    def log(self):
        with open(self.state + ".log", errors="replace") as f:
            return f.read()

    def job(self, jid):
        """`ebb job show ID --json`, parsed; None when it fails."""
        r = self.ebb("job", "show", jid, "--json")
        try:
            return json.loads(r.stdout)
        except ValueError:
            return None

    def wait_end(self, jid, seconds):
        """The job's final state, or its state when `seconds` ran out."""
        def ended():
            j = self.job(jid)
            return j if j and j["state"] in ("succeeded", "failed", "cancelled") else None
        j = wait_for(ended, seconds, 0.2)
        return j["state"] if j else (self.job(jid) or {}).get("state")


class FakeS3:
    """tests/objstore/fake_s3.py on 127.0.0.1: SigV4 recomputed with
    botocore, requests logged as JSON lines, faults on request."""

    AKID, SECRET = "AKIDTEST", "fake/secret+key"

    def __init__(self, tmp, bucket, min_part=5 << 20, akid=None, secret=None,
                 dump=False, page_size=1000):
        """`akid`, `secret`: the key pair it accepts (default AKID, SECRET);
        `dump`: it writes what it holds to a file after each request, for
        state(); `page_size`: the most keys or uploads a listing page has."""
        self.bucket = bucket
        self.AKID, self.SECRET = akid or self.AKID, secret or self.SECRET
        self.log_path = os.path.join(tmp, "fake_s3.log")
        self.faults_path = os.path.join(tmp, "fake_s3.faults")
        self.dump_path = os.path.join(tmp, "fake_s3.json") if dump else None
        self.set_faults([])
        self.proc = subprocess.Popen(
            [sys.executable, FAKE_S3, "--bucket", bucket, "--access-key", self.AKID,
             "--secret-key", self.SECRET, "--log", self.log_path,
             "--faults", self.faults_path, "--min-part", str(min_part),
             "--page-size", str(page_size)] +
            (["--dump", self.dump_path] if dump else []),
            stdout=subprocess.PIPE, text=True)
        _STARTED.append(self.proc)
        line = self.proc.stdout.readline().split()
        self.port = int(line[1]) if len(line) == 2 and line[0] == "PORT" else 0
        self.endpoint = "http://127.0.0.1:%d" % self.port

    def set_faults(self, faults):
        with open(self.faults_path + ".new", "w") as f:
            json.dump(faults, f)
        os.rename(self.faults_path + ".new", self.faults_path)

    def state(self):
        """What it holds ({"objects": ..., "uploads": ...}), from its dump."""
        try:
            with open(self.dump_path) as f:
                return json.load(f)
        except (OSError, ValueError):
            return {"objects": {}, "uploads": {}}

    def requests(self):
        try:
            with open(self.log_path) as f:
                return [json.loads(line) for line in f if line.strip()]
        except FileNotFoundError:
            return []

    def client(self):
        """A botocore S3 client for the fake, to look at what it holds."""
        import botocore.session
        from botocore.config import Config
        return botocore.session.get_session().create_client(
            "s3", region_name="us-east-1", endpoint_url=self.endpoint,
            aws_access_key_id=self.AKID, aws_secret_access_key=self.SECRET,
            config=Config(s3={"addressing_style": "path"}))

    def objects(self, prefix=""):
        """{key: bytes} of every object under `prefix` (that still exists
        when it is read)."""
        c, out, token = self.client(), {}, None
        while True:
            kw = {"Bucket": self.bucket, "Prefix": prefix}
            if token:
                kw["ContinuationToken"] = token
            page = c.list_objects_v2(**kw)
            for o in page.get("Contents", []):
                try:
                    out[o["Key"]] = c.get_object(Bucket=self.bucket,
                                                 Key=o["Key"])["Body"].read()
                except c.exceptions.NoSuchKey:
                    pass  # deleted since the listing
            token = page.get("NextContinuationToken")
            if not token:
                return out

    def stop(self):
        self.proc.terminate()
        self.proc.wait()

