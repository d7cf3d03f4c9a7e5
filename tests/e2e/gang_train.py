#!/usr/bin/env python3
"""A data-parallel training job for gangs, with no framework.

Each of NNODES ranks fits the same linear model on its own shard of
synthetic data; every step the ranks exchange their gradients over TCP
(rank 0, at MASTER_ADDR:MASTER_PORT, sums them in rank order and sends the
sum back: a hand-written all-reduce) and apply the same update. So the
model after N steps is bit for bit the one a single process computes with
--single (the same sums in the same order), however often the gang was
checkpointed, stopped and resumed.

The checkpoint protocol for a gang (docs/gangs.md): a rank's checkpoint
signal only raises a flag, which the all-reduce carries; every rank sees
the largest flag of the step (1: checkpoint, 2: checkpoint and stop) and
writes its own part, named after the step, at the same step. ebbd counts
the gang's checkpoint once every rank has a part of that name, and hands
each rank its part of the newest whole one as EBB_RESUME_FROM. Each part
names its rank; a rank handed another rank's part, or ranks that resume
from different steps, refuse to run (exit 3).

With GANG_ELASTIC=1 (gang.restart: replace_lost) rank 0 keeps listening:
when a rank goes away, rank 0 waits for its replacement, which joins with
rank 0's weights and step and carries on the step where its predecessor
left it. Each rank's sample for a step is drawn from (seed, rank, step)
alone, so a newcomer draws what its predecessor would have.

Usage: gang_train.py --out MODEL [--steps N] [--step-sleep S]   (a rank)
       gang_train.py --single --nodes N --out MODEL [--steps N]  (reference)
"""
import os
import signal

pending = {"flag": 0}


def on_stop(signum, frame):
    pending["flag"] = 2


def on_checkpoint(signum, frame):
    pending["flag"] = max(pending["flag"], 1)


STOP_SIGNAL = getattr(signal, os.environ.get("EBB_SIGNAL") or "SIGUSR1")
PERIODIC_SIGNAL = getattr(signal, os.environ.get("EBB_PERIODIC_SIGNAL") or "SIGUSR2")
signal.signal(STOP_SIGNAL, on_stop)
signal.signal(PERIODIC_SIGNAL, on_checkpoint)

import argparse  # noqa: E402
import json  # noqa: E402
import random  # noqa: E402
import socket  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

FEATURES = 8
SAMPLES = 256
LEARNING_RATE = 0.01
SEED = 4321
CONNECT_FOR = 120.0  # seconds a rank waits for its peers


def make_data():
    rng = random.Random(SEED)
    truth = [rng.uniform(-1, 1) for _ in range(FEATURES)]
    data = []
    for _ in range(SAMPLES):
        x = [rng.uniform(-1, 1) for _ in range(FEATURES)]
        data.append((x, sum(w * v for w, v in zip(truth, x)) + rng.gauss(0, 0.01)))
    return data


def gradient(weights, shard, rank, step):
    x, y = shard[random.Random("%d-%d-%d" % (SEED, rank, step)).randrange(len(shard))]
    err = sum(w * v for w, v in zip(weights, x)) - y
    return [err * v for v in x]


def apply(weights, grads):
    """grads: one gradient per rank, in rank order; summed in that order."""
    total = [0.0] * FEATURES
    for g in grads:
        total = [t + v for t, v in zip(total, g)]
    n = float(len(grads))
    return [w - LEARNING_RATE * t / n for w, t in zip(weights, total)]


def write_model(path, steps, weights):
    with open(path + ".tmp", "w") as f:
        f.write(json.dumps({"steps": steps, "weights": [repr(w) for w in weights]}) + "\n")
    os.rename(path + ".tmp", path)


def single(args):
    data = make_data()
    shards = [data[r::args.nodes] for r in range(args.nodes)]
    weights = [0.0] * FEATURES
    for step in range(args.steps):
        weights = apply(weights, [gradient(weights, shards[r], r, step)
                                  for r in range(args.nodes)])
    write_model(args.out, args.steps, weights)
    return 0


class Line:
    """JSON lines over a socket."""

    def __init__(self, sock):
        self.sock, self.buf = sock, b""

    def send(self, obj):
        self.sock.sendall((json.dumps(obj) + "\n").encode())

    def recv(self):
        while b"\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("a peer went away")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)


class Master:
    """Rank 0's side: a line to every other rank, and (elastic) the
    listening socket a replacement joins through."""

    def __init__(self, nodes, step, weights, elastic):
        addr, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
        self.srv = socket.socket(socket.AF_INET6 if ":" in addr else socket.AF_INET)
        self.srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.srv.bind((addr, port))
        self.srv.listen(nodes)
        self.srv.settimeout(CONNECT_FOR)
        self.elastic, self.peers = elastic, {}
        while len(self.peers) < nodes - 1:
            rank, line = self.accept(step, weights, strict=True)
            self.peers[rank] = line
        if not elastic:
            self.srv.close()

    def accept(self, step, weights, strict=False):
        """The next rank to connect. `strict` (the gang forms): it must have
        resumed from this step; else (a replacement) it takes this one."""
        conn, _ = self.srv.accept()
        conn.settimeout(None)
        line = Line(conn)
        hello = line.recv()
        if strict and hello["step"] != step:
            print("rank %d resumed at step %d, rank 0 at %d: refusing"
                  % (hello["rank"], hello["step"], step), flush=True)
            line.send({"go": False})
            sys.exit(3)
        line.send({"go": True, "step": step, "weights": weights})
        return hello["rank"], line

    def recv(self, rank, step, weights):
        """Rank `rank`'s message for this step; an elastic gang waits for
        the replacement of a rank that went away."""
        while True:
            try:
                return self.peers[rank].recv()
            except (ConnectionError, OSError):
                if not self.elastic:
                    raise
            print("rank %d went away at step %d: waiting for its replacement"
                  % (rank, step), flush=True)
            new, line = self.accept(step, weights)
            print("rank %d rejoined at step %d" % (new, step), flush=True)
            self.peers[new] = line


def connect_master(rank, step):
    """Another rank's line to rank 0, and the step and weights rank 0 has."""
    addr, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
    deadline = time.monotonic() + CONNECT_FOR
    while True:
        try:
            sock = socket.create_connection((addr, port), timeout=5)
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    sock.settimeout(None)
    line = Line(sock)
    line.send({"rank": rank, "step": step})
    go = line.recv()
    if not go.get("go"):
        sys.exit(3)
    return line, go["step"], go["weights"]


def all_reduce(rank, nodes, peers, grad, flag, step, weights):
    """Every rank's gradients in rank order, and the largest flag."""
    if rank == 0:
        grads, top = [grad], flag
        for r in range(1, nodes):
            msg = peers.recv(r, step, weights)
            grads.append(msg["grad"])
            top = max(top, msg["flag"])
        for r in range(1, nodes):
            peers.peers[r].send({"grads": grads, "flag": top})
        return grads, top
    peers.send({"grad": grad, "flag": flag})
    msg = peers.recv()
    return msg["grads"], msg["flag"]


def save_part(directory, state):
    final = os.path.join(directory, "step-%08d" % state["step"])
    if os.path.exists(final):
        return final
    tmp = os.path.join(directory, ".tmp-%d-%d" % (state["step"], os.getpid()))
    os.makedirs(tmp)
    with open(os.path.join(tmp, "state.json"), "w") as f:
        json.dump(state, f)
        f.flush()
        os.fsync(f.fileno())
    os.rename(tmp, final)
    return final


def load_part(path):
    with open(os.path.join(path, "state.json")) as f:
        return json.load(f)


def rank_main(args):
    rank, nodes = int(os.environ["NODE_RANK"]), int(os.environ["NNODES"])
    ckpt_dir = os.environ.get("EBB_CHECKPOINT_DIR", "")
    resume = os.environ.get("EBB_RESUME_FROM", "")
    data = make_data()
    shard = data[rank::nodes]
    elastic = os.environ.get("GANG_ELASTIC") == "1"
    if resume:
        state = load_part(resume)
        if state.get("rank", rank) != rank:  # every rank resumes from its own part
            print("rank %d was given rank %d's part %s" % (rank, state["rank"], resume),
                  flush=True)
            return 3
        print("rank %d resuming at step %d from %s" % (rank, state["step"], resume),
              flush=True)
    else:
        state = {"step": 0, "weights": [0.0] * FEATURES}
    weights, step = state["weights"], state["step"]
    if rank == 0:
        peers = Master(nodes, step, weights, elastic)
    else:
        peers, at, weights_there = connect_master(rank, step)
        if at != step:  # a replacement joins where the gang is
            print("rank %d joins at step %d" % (rank, at), flush=True)
            step, weights = at, weights_there
    print("rank %d of %d at step %d, peers %s" % (rank, nodes, step,
                                                 os.environ.get("EBB_NODES")), flush=True)
    while step < args.steps:
        flag, pending["flag"] = pending["flag"], 0
        grads, top = all_reduce(rank, nodes, peers, gradient(weights, shard, rank, step),
                                flag, step, weights)
        weights = apply(weights, grads)
        step += 1
        if rank == 0 and (step % 50 == 0 or step == args.steps):
            print("EBB_PROGRESS %.4f" % (step / args.steps), flush=True)
        if args.step_sleep:
            time.sleep(args.step_sleep)
        if top and ckpt_dir:
            where = save_part(ckpt_dir, {"step": step, "weights": weights, "rank": rank})
            print("rank %d checkpoint at step %d: %s" % (rank, step, where), flush=True)
            if top == 2:
                return 0
    if rank == 0:
        write_model(args.out, step, weights)
    print("rank %d done: %d steps" % (rank, step), flush=True)
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--step-sleep", type=float, default=0.0)
    p.add_argument("--single", action="store_true")
    p.add_argument("--nodes", type=int, default=2)
    args = p.parse_args()
    return single(args) if args.single else rank_main(args)


if __name__ == "__main__":
    rc = main()
    # Python puts back the default action of the signals it handles as it
    # shuts down, and the default ends the process: a checkpoint signal
    # arriving then would turn a finished rank into one killed by it
    # (status 140). Ignored ones stay ignored.
    signal.signal(STOP_SIGNAL, signal.SIG_IGN)
    signal.signal(PERIODIC_SIGNAL, signal.SIG_IGN)
    sys.exit(rc)
