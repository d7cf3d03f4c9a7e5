#!/usr/bin/env python3
"""Hostile clients for tests/security/test_limits.sh, one per subcommand.
Each prints one line of `key=value` facts for the test to check.

    nul PORT                 a request line with a NUL byte
    half PORT                half a request head, then waits for the server
    unix-half SOCKET         half an API message, then waits
    flood PORT N SECONDS     N idle connections; how many the server closed
    unix-flood SOCKET N      N idle API connections; how many were refused
    pipeline PORT SECONDS    pipelines requests and never reads an answer
    spec SOCKET FILE N       sends FILE as a submit N times, bypassing the CLI
    readers SOCKET N         N store reads on one connection in one write
"""
import json
import socket
import sys
import time


def tcp(port):
    s = socket.create_connection(("127.0.0.1", int(port)))
    s.settimeout(15)
    return s


def read_until_closed(s, limit=15):
    """What the server sends until it closes; (bytes, seconds waited)."""
    t0 = time.monotonic()
    got = b""
    s.settimeout(limit)
    try:
        while True:
            b = s.recv(65536)
            if not b:
                break
            got += b
    except (socket.timeout, ConnectionResetError):
        pass
    return got, time.monotonic() - t0


def cmd_nul(port):
    s = tcp(port)
    s.sendall(b"GET /v1/agent/job\0x HTTP/1.1\r\nHost: a\r\n\r\n")
    got, _ = read_until_closed(s)
    print("status=%s" % got.split(b"\r\n", 1)[0].decode(errors="replace").replace(" ", "_"))


def cmd_half(port):
    s = tcp(port)
    s.sendall(b"GET /v1/agent/job HTTP/1.1\r\nHost: a\r\n")
    got, waited = read_until_closed(s)
    first = got.split(b"\r\n", 1)[0].decode(errors="replace").replace(" ", "_")
    print("status=%s closed_after=%.2f" % (first or "none", waited))


def cmd_unix_half(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    s.sendall(b'{"id":1,"meth')
    got, waited = read_until_closed(s)
    print("bytes=%d closed_after=%.2f" % (len(got), waited))


def cmd_flood(port, n, seconds):
    conns = []
    for _ in range(int(n)):
        conns.append(socket.create_connection(("127.0.0.1", int(port))))
    for c in conns:
        c.setblocking(False)
    print("opened=%d" % len(conns), flush=True)
    # The test checks the API socket while these are held; then they are
    # watched until the server has closed them all, or SECONDS pass.
    closed = set()
    t0 = time.monotonic()
    while len(closed) < len(conns) and time.monotonic() - t0 < float(seconds):
        for i, c in enumerate(conns):
            if i in closed:
                continue
            try:
                if c.recv(1) == b"":
                    closed.add(i)
            except BlockingIOError:
                pass
            except (ConnectionResetError, OSError):
                closed.add(i)
        time.sleep(0.05)
    print("closed=%d after=%.2f" % (len(closed), time.monotonic() - t0))


def cmd_unix_flood(path, n):
    conns = []
    for _ in range(int(n)):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(path)
        conns.append(s)
    # A refused connection gets a "busy" line, then EOF; a held one nothing.
    time.sleep(0.5)
    refused = 0
    for s in conns:
        s.setblocking(False)
        try:
            if b"busy" in s.recv(4096):
                refused += 1
        except BlockingIOError:
            pass
    print("held=%d refused=%d" % (len(conns) - refused, refused), flush=True)
    time.sleep(1.5)  # held while the test checks another user's status


def cmd_pipeline(port, seconds):
    s = tcp(port)
    s.setblocking(False)
    req = b"GET /v1/agent/job HTTP/1.1\r\nAuthorization: Bearer nope\r\n\r\n" * 1000
    sent = 0
    t0 = time.monotonic()
    dropped = None
    while time.monotonic() - t0 < float(seconds):
        try:
            sent += s.send(req)
        except BlockingIOError:
            time.sleep(0.01)
        except (BrokenPipeError, ConnectionResetError):
            dropped = time.monotonic() - t0
            break
    print("sent=%d dropped_after=%s" % (sent, "%.2f" % dropped if dropped else "never"))


def unix_call_lines(path, payload, n_answers):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(300)
    s.connect(path)
    s.sendall(payload)
    buf = b""
    while buf.count(b"\n") < n_answers:
        b = s.recv(65536)
        if not b:
            break
        buf += b
    return [json.loads(line) for line in buf.split(b"\n") if line]


def cmd_spec(path, file, n):
    yaml = open(file).read()
    req = json.dumps({"id": 1, "method": "submit",
                      "params": {"file": file, "yaml": yaml, "workdir": "/"}})
    worst = 0.0
    message = ""
    for _ in range(int(n)):
        t0 = time.monotonic()
        answers = unix_call_lines(path, req.encode() + b"\n", 1)
        worst = max(worst, time.monotonic() - t0)
        message = answers[0].get("error", {}).get("message", "accepted") if answers else "none"
    print("worst=%.3f message=%s" % (worst, message.replace(" ", "_")))


def cmd_readers(path, n):
    payload = b"".join(json.dumps({"id": i, "method": "prices", "params": {}}).encode()
                       + b"\n" for i in range(int(n)))
    answers = unix_call_lines(path, payload, int(n))
    busy = sum(1 for a in answers if a.get("error", {}).get("code") == "busy")
    ok = sum(1 for a in answers if "result" in a)
    print("ok=%d busy=%d" % (ok, busy))
    for a in answers:
        if "error" in a:
            print("#", a["error"]["message"])
            break


if __name__ == "__main__":
    cmds = {"nul": cmd_nul, "half": cmd_half, "unix-half": cmd_unix_half,
            "flood": cmd_flood, "unix-flood": cmd_unix_flood, "pipeline": cmd_pipeline, "spec": cmd_spec,
            "readers": cmd_readers}
    cmds[sys.argv[1]](*sys.argv[2:])
