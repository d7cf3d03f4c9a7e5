#!/usr/bin/env python3
"""Every shipped availability trace as one ebb availability file of pools,
for bench-policies --cbl (the Can't-Be-Late harness).

Output: bench/scenarios/cbl-pools.csv,
    timestamp_utc,provider,zone,instance_type,available
where `provider` names the trace the pool comes from (its fold in the
harness's leave-one-trace-out) and (zone, instance_type) the pool:
  aws-dime   data/availability_aws_2020-03.csv (derived from the keep-alive
             log's AWS part by data/tools/avail_from_dime.py), as is;
  gcp-dime   the GCP part of data/traces/avail_dime_persistent_events_
             2020-03.csv: each collector slot (log, instance name) is a
             pool, available from a "created"/"running" observation, not
             from a "not_running"/"create_failed" one ("deleted" is the
             collector's clean-up and changes nothing); the GPU is named by
             the slot's own rows ("unknown" when no row names it);
  gcp-probe  data/traces/avail_gcp_preemptible_gpu_probes_2020-02_2020-03
             .csv: `granted` of each (zone, gpu, count) probe, held until
             the next probe (about 5 h).
A row is written where the value changes, and each pool's last
observation too (where observation ended). Pools whose value never
changes are left out (every policy pays the same on them), and so are
none else. Same bytes for the same inputs.

Usage: cbl_pools.py [DATA_DIR [OUTPUT]]   (defaults: the shipped paths)
"""

import csv
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_DATA = os.path.join(HERE, "..", "..", "data")
DEFAULT_OUT = os.path.join(HERE, "cbl-pools.csv")


def changes(obs):
    """[(time, value)] sorted by time -> the rows to write."""
    out, last = [], None
    for i, (t, v) in enumerate(obs):
        if v != last or i == len(obs) - 1:
            out.append((t, v))
            last = v
    return out


def aws(data):
    pools = {}
    with open(os.path.join(data, "availability_aws_2020-03.csv")) as f:
        for r in csv.DictReader(f):
            key = ("aws-dime", r["zone"], r["instance_type"])
            pools.setdefault(key, []).append((r["timestamp_utc"],
                                              int(r["available"])))
    return pools


def gcp_dime(data):
    path = os.path.join(data, "traces",
                        "avail_dime_persistent_events_2020-03.csv")
    slots, zone, gpu = {}, {}, {}
    with open(path) as f:
        for r in csv.DictReader(f):
            if r["cloud"] != "gcp":
                continue
            slot = (r["log"], r["instance_id"])
            if r["zone"]:
                zone[slot] = r["zone"]
            if r["gpu_type"]:
                gpu[slot] = "%sx%s" % (r["gpu_type"], r["num_gpus"])
            value = {"created": 1, "running": 1, "not_running": 0,
                     "create_failed": 0}.get(r["event"])
            if value is not None:
                slots.setdefault(slot, []).append((r["timestamp_utc"], value))
    pools = {}
    for slot, obs in slots.items():
        itype = "%s-%s" % (gpu.get(slot, "unknown"), slot[1])
        obs.sort(key=lambda x: x[0])  # stable: keeps log order
        pools[("gcp-dime", zone.get(slot, "unknown"), itype)] = obs
    return pools


def gcp_probe(data):
    path = os.path.join(data, "traces",
                        "avail_gcp_preemptible_gpu_probes_2020-02_2020-03.csv")
    pools = {}
    with open(path) as f:
        for r in csv.DictReader(f):
            key = ("gcp-probe", r["zone"],
                   "%sx%s" % (r["gpu_type"], r["num_gpus"]))
            pools.setdefault(key, []).append((r["timestamp_utc"],
                                              int(r["granted"])))
    return pools


def main(argv):
    data = argv[1] if len(argv) > 1 else DEFAULT_DATA
    dst = argv[2] if len(argv) > 2 else DEFAULT_OUT
    pools = {}
    for part in (aws(data), gcp_dime(data), gcp_probe(data)):
        pools.update(part)
    rows, kept = [], 0
    for key in sorted(pools):
        obs = sorted(pools[key], key=lambda x: x[0])
        if len({v for _, v in obs}) < 2:
            continue
        kept += 1
        for t, v in changes(obs):
            rows.append((key, t, v))
    with open(dst, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["timestamp_utc", "provider", "zone", "instance_type",
                    "available"])
        for (prov, zone, itype), t, v in rows:
            w.writerow([t, prov, zone, itype, v])
    print("%s: %d pools of %d (the rest never change), %d rows"
          % (dst, kept, len(pools), len(rows)))


if __name__ == "__main__":
    main(sys.argv)
