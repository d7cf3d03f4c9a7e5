#!/usr/bin/env python3
"""A small deterministic training job that follows ebb's checkpoint protocol.

It fits a linear model to synthetic data with stochastic gradient descent
(plain Python, fixed seed), so two runs with the same arguments produce the
same model bit for bit -- also when one of them was stopped, checkpointed
and resumed any number of times.

ebb-agent gives it:
  EBB_CHECKPOINT_DIR   where checkpoints go
  EBB_RESUME_FROM      the newest complete checkpoint, "" on the first run
  EBB_SIGNAL           checkpoint and exit (default SIGUSR1)
  EBB_PERIODIC_SIGNAL  checkpoint and carry on (default SIGUSR2)

Checkpoint protocol: write into a temporary directory inside
EBB_CHECKPOINT_DIR whose name starts with ".", then rename it to its final
name. A checkpoint cut short by a kill stays a "."-temporary, which ebb
never offers and removes at the next start.

Usage: train.py --out MODEL [--steps N] [--seed S] [--step-sleep SECONDS]
(MODEL may also come from the environment variable TRAIN_OUT.)
"""
import os
import signal

# Signal handlers first thing, before the slower imports: a checkpoint
# signal that arrives before its handler is installed would kill the job.
# The handlers only set flags; the training loop acts on them between steps
# (a safe point: the state is never saved half-updated).
pending = {"stop": False, "checkpoint": False}


def on_stop(signum, frame):
    pending["stop"] = True


def on_checkpoint(signum, frame):
    pending["checkpoint"] = True


signal.signal(getattr(signal, os.environ.get("EBB_SIGNAL") or "SIGUSR1"), on_stop)
signal.signal(getattr(signal, os.environ.get("EBB_PERIODIC_SIGNAL") or "SIGUSR2"),
              on_checkpoint)

import argparse  # noqa: E402
import json  # noqa: E402
import random  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

FEATURES = 8
SAMPLES = 256
LEARNING_RATE = 0.01

def make_data(seed):
    rng = random.Random(seed)
    truth = [rng.uniform(-1, 1) for _ in range(FEATURES)]
    data = []
    for _ in range(SAMPLES):
        x = [rng.uniform(-1, 1) for _ in range(FEATURES)]
        y = sum(w * v for w, v in zip(truth, x)) + rng.gauss(0, 0.01)
        data.append((x, y))
    return data


def save_checkpoint(directory, state):
    """Writes state.json into .tmp-..., then renames it: all or nothing."""
    final = os.path.join(directory, "step-%08d" % state["step"])
    if os.path.exists(final):
        return final
    tmp = os.path.join(directory, ".tmp-%d-%d" % (state["step"], os.getpid()))
    os.makedirs(tmp)
    path = os.path.join(tmp, "state.json")
    with open(path, "w") as f:
        json.dump(state, f)
        f.flush()
        os.fsync(f.fileno())
    os.rename(tmp, final)
    return final


def load_checkpoint(path):
    with open(os.path.join(path, "state.json")) as f:
        state = json.load(f)
    # random's state is a tuple of (int, tuple of ints, None-or-float).
    version, internal, gauss = state["rng"]
    state["rng"] = (version, tuple(internal), gauss)
    return state


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=os.environ.get("TRAIN_OUT"))
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--step-sleep", type=float, default=0.0)
    args = p.parse_args()
    if not args.out:
        p.error("--out MODEL (or TRAIN_OUT) is required")

    ckpt_dir = os.environ.get("EBB_CHECKPOINT_DIR", "")
    resume = os.environ.get("EBB_RESUME_FROM", "")

    data = make_data(args.seed)
    if resume:
        state = load_checkpoint(resume)
        print("resuming at step %d from %s" % (state["step"], resume), flush=True)
    else:
        state = {"step": 0, "weights": [0.0] * FEATURES,
                 "rng": random.Random(args.seed + 1).getstate()}
    rng = random.Random()
    rng.setstate(state["rng"])
    weights = state["weights"]

    step = state["step"]
    while step < args.steps:
        x, y = data[rng.randrange(SAMPLES)]
        err = sum(w * v for w, v in zip(weights, x)) - y
        weights = [w - LEARNING_RATE * err * v for w, v in zip(weights, x)]
        step += 1
        if step % 50 == 0 or step == args.steps:
            print("EBB_PROGRESS %.4f" % (step / args.steps), flush=True)
        if args.step_sleep:
            time.sleep(args.step_sleep)
        if (pending["stop"] or pending["checkpoint"]) and ckpt_dir:
            snapshot = {"step": step, "weights": weights, "rng": rng.getstate()}
            where = save_checkpoint(ckpt_dir, snapshot)
            print("checkpoint at step %d: %s" % (step, where), flush=True)
            pending["checkpoint"] = False
            if pending["stop"]:
                return 0

    # repr() round-trips floats exactly, so equal models are equal files.
    with open(args.out + ".tmp", "w") as f:
        f.write(json.dumps({"steps": step, "weights": [repr(w) for w in weights]}))
        f.write("\n")
    os.rename(args.out + ".tmp", args.out)
    print("done: %d steps, model in %s" % (step, args.out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
