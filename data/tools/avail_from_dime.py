#!/usr/bin/env python3
"""Derive an ebb availability trace from the training_on_a_dime keep-alive log.

Input: data/traces/avail_dime_persistent_events_2020-03.csv, one row per
line the collector (scripts/aws/availability.py in
stanford-futuredata/training_on_a_dime) printed:
    timestamp_utc,cloud,log,zone,gpu_type,num_gpus,instance_id,event
Output: an ebb availability trace,
    timestamp_utc,provider,zone,instance_type,available
for the AWS part of the log (2020-03-15..17, us-east-1b and us-east-1c).

How the collector worked (read from its source): it keeps one "slot" per
(zone, gpu_type, num_gpus), visited in a fixed order every ~10 minutes:
    us-east-1b v100x1, v100x8, k80x1, k80x8, then the same for us-east-1c.
Visiting a slot that holds an instance prints "running", or "not_running"
(then terminates it: "deleted") and tries to launch again. Visiting an empty
slot tries to launch a one-time spot request: "created" when a spot
instance was granted, "create_failed" when not. The log line for a failed
launch does not name the zone, so this script replays the visiting order to
attribute each create_failed to its slot, and checks that every event with
a zone arrives at the slot the replay expects (it stops if one does not).

Per slot, `available` is 1 from a "created" or "running" observation and 0
from a "not_running" or "create_failed" observation, until the next
observation that differs. "deleted" is the collector's clean-up after
not_running and changes nothing. A row is written when the value changes,
and the slot's last observation is written too, so that the file shows
where observation ended. `available` counts instances the collector could
hold: 1 means at least one instance of that type could be had, not the
zone's whole capacity.

Usage: avail_from_dime.py [INPUT [OUTPUT]]   (defaults: the shipped paths)
"""

import csv
import os
import sys

INSTANCE_TYPES = {
    ("v100", 1): "p3.2xlarge",
    ("v100", 8): "p3.16xlarge",
    ("k80", 1): "p2.xlarge",
    ("k80", 8): "p2.8xlarge",
}
ZONES = ["us-east-1b", "us-east-1c"]
GPU_TYPES = ["v100", "k80"]
NUM_GPUS = [1, 8]
# The collector's dict of slots, in insertion order (its visiting order).
SLOTS = [(z, g, n) for z in ZONES for g in GPU_TYPES for n in NUM_GPUS]

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_IN = os.path.join(HERE, "..", "traces",
                          "avail_dime_persistent_events_2020-03.csv")
DEFAULT_OUT = os.path.join(HERE, "..", "availability_aws_2020-03.csv")


class Replay:
    """Follows the collector's loop over SLOTS to name each event's slot."""

    def __init__(self):
        self.live = {s: False for s in SLOTS}  # holds an instance
        self.cursor = -1          # index of the slot being visited
        self.relaunching = False  # current slot saw not_running this visit

    def _advance_to(self, want):
        """Moves the cursor to the next slot (cyclically) that satisfies
        want(slot); returns it. The slots skipped must be ones whose visit
        printed nothing, which the collector never does, so skipping is an
        inconsistency unless the skipped slot was never reached."""
        for step in range(1, len(SLOTS) + 1):
            i = (self.cursor + step) % len(SLOTS)
            if want(SLOTS[i]):
                if step != 1:
                    raise ValueError("skipped %d slot(s) before %s"
                                     % (step - 1, SLOTS[i]))
                self.cursor = i
                self.relaunching = False
                return SLOTS[i]
        raise ValueError("no slot fits")

    def slot_of(self, zone, gpu, num, event):
        cur = SLOTS[self.cursor] if self.cursor >= 0 else None
        if event == "deleted":
            if cur != (zone, gpu, num) or not self.relaunching:
                raise ValueError("deleted outside a relaunch")
            return cur
        if event in ("created", "create_failed"):
            # A launch follows not_running in the same visit, or is the
            # whole visit of an empty slot.
            if (self.relaunching and cur[1:] == (gpu, num)
                    and (zone == "" or zone == cur[0])):
                slot = cur
                self.relaunching = False
            else:
                slot = self._advance_to(
                    lambda s: not self.live[s] and s[1:] == (gpu, num)
                    and (zone == "" or zone == s[0]))
            self.live[slot] = event == "created"
            return slot
        # running / not_running: a visit to a live slot, zone given.
        slot = self._advance_to(lambda s: s == (zone, gpu, num))
        if not self.live[slot]:
            raise ValueError("%s for a slot without an instance" % event)
        if event == "not_running":
            self.live[slot] = False
            self.relaunching = True
        return slot


def main(argv):
    src = argv[1] if len(argv) > 1 else DEFAULT_IN
    dst = argv[2] if len(argv) > 2 else DEFAULT_OUT
    with open(src, newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["cloud"] == "aws"]
    rows.sort(key=lambda r: r["timestamp_utc"])  # stable: keeps log order

    replay = Replay()
    series = {s: [] for s in SLOTS}  # slot -> [(time, available)]
    for lineno, r in enumerate(rows, 1):
        gpu, num = r["gpu_type"], int(r["num_gpus"])
        try:
            slot = replay.slot_of(r["zone"], gpu, num, r["event"])
        except ValueError as e:
            sys.exit("%s: AWS event %d (%s %s): cannot replay: %s"
                     % (src, lineno, r["timestamp_utc"], r["event"], e))
        value = {"created": 1, "running": 1, "not_running": 0,
                 "create_failed": 0}.get(r["event"])
        if value is not None:
            series[slot].append((r["timestamp_utc"], value))

    out = []
    for zone, gpu, num in SLOTS:
        obs = series[(zone, gpu, num)]
        itype = INSTANCE_TYPES[(gpu, num)]
        last = None
        for i, (t, v) in enumerate(obs):
            if v != last or i == len(obs) - 1:
                out.append((itype, zone, t, v))
                last = v
    out.sort(key=lambda x: (x[1], x[0], x[2]))  # by series, then time
    with open(dst, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["timestamp_utc", "provider", "zone", "instance_type",
                    "available"])
        for itype, zone, t, v in out:
            w.writerow([t, "aws", zone, itype, v])
    print("%s: %d rows, %d series" % (dst, len(out), len(SLOTS)))


if __name__ == "__main__":
    main(sys.argv)
