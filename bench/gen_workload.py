#!/usr/bin/env python3
"""Writes a synthetic `ebb backtest` workload: N jobs submitted over a D-day
window, deterministic from a seed (same arguments, same bytes).

    python3 bench/gen_workload.py [--jobs 1000] [--days 90] [--seed 1]
        [--start 2019-12-23T04:00:00Z] [-o workload.yaml]

Made for the shipped AWS p2/p3 trace and data/catalog.csv (see
data/README.md). Every job is submitted and has its deadline inside
[start, start + days]. The default start is 2019-12-23T04:00Z, not the
trace's first row (2019-12-20T06:39Z): 92 of the 98 series start between
2019-12-22T03Z and 2019-12-23T03Z, and the market lists an offer (spot or
its on-demand sibling) only from its series' first row on, so a job
submitted on 2019-12-20/21 finds nothing to run on and waits. With the
defaults the window runs to 2020-03-22: the price trace ends on
2020-02-29, so about the last 22 days replay a frozen market (the sim
holds each series' last price and capacity once its traces end). That is
deliberate: the benchmark's "90-day, 1,000-job run" covers 90 days of
simulated time; pass --days 67 to keep every job inside the trace.

The mix, per job (all draws from one seeded generator):
  work              1h..24h, log-uniform, on the reference p3.2xlarge
  deadline          relative, (1.2..3) x work + restart_overhead
  restart_overhead  3m..10m
  checkpoint.every  15m..1h, grace 90s
  market            70% spot-fallback, 15% spot, 15% on-demand
  instance types    50% p3.2xlarge; 20% p3.2xlarge or p3.8xlarge;
                    10% p3.8xlarge or p3.16xlarge; 10% p3.16xlarge;
                    10% K80 (p2.8xlarge or p2.16xlarge: fast enough that the
                    deadline, set in reference work, can be met)
  regions           35% anywhere; 30% the three US regions; 10% the three EU
                    regions; 25% a single region (kept only where the types
                    are sold: p2 is not offered in eu-west-2, nor
                    p2.16xlarge in eu-central-1)
  budget            25% of jobs: 0.45..1.0 x the job's on-demand cost on its
                    cheapest allowed (type, region) (1.1..1.5 x for
                    on-demand jobs), so some end budget_exhausted
  policy            not set: `ebb backtest --policy` chooses
"""
import argparse
import datetime
import math
import random
import sys

US = ["us-east-1", "us-east-2", "us-west-2"]
EU = ["eu-west-1", "eu-west-2", "eu-central-1"]

# data/catalog.csv, AWS rows: (region, type) -> (on-demand USD/h, speed).
SPEED = {"p2.xlarge": 0.16, "p2.8xlarge": 1.19, "p2.16xlarge": 2.3,
         "p3.2xlarge": 1.0, "p3.8xlarge": 3.84, "p3.16xlarge": 7.44}
OD_BASE = {"p2.xlarge": 0.9, "p2.8xlarge": 7.2, "p2.16xlarge": 14.4,
           "p3.2xlarge": 3.06, "p3.8xlarge": 12.24, "p3.16xlarge": 24.48}
OD_EU = {("eu-west-1", "p2.xlarge"): 0.972, ("eu-west-1", "p2.8xlarge"): 7.776,
         ("eu-west-1", "p2.16xlarge"): 15.552,
         ("eu-west-1", "p3.2xlarge"): 3.305, ("eu-west-1", "p3.8xlarge"): 13.22,
         ("eu-west-1", "p3.16xlarge"): 26.44,
         ("eu-west-2", "p3.2xlarge"): 3.589, ("eu-west-2", "p3.8xlarge"): 14.356,
         ("eu-west-2", "p3.16xlarge"): 28.712,
         ("eu-central-1", "p2.xlarge"): 1.326,
         ("eu-central-1", "p2.8xlarge"): 10.608,
         ("eu-central-1", "p3.2xlarge"): 3.823,
         ("eu-central-1", "p3.8xlarge"): 15.292,
         ("eu-central-1", "p3.16xlarge"): 30.584}


def od_price(region, itype):
    """On-demand USD/h, or None where the catalog has no row."""
    if region in US:
        return OD_BASE[itype]
    return OD_EU.get((region, itype))


def fmt_dur_min(minutes):
    minutes = int(minutes)
    h, m = divmod(minutes, 60)
    if h and m:
        return "%dh%dm" % (h, m)
    return "%dh" % h if h else "%dm" % m


def fmt_time(t):
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def pick(rng, table):
    """table: [(weight, value)]; weights sum to 100."""
    x = rng.random() * 100
    for w, v in table:
        if x < w:
            return v
        x -= w
    return table[-1][1]


def job(rng, start, window_min):
    work_min = round(math.exp(rng.uniform(math.log(60), math.log(24 * 60))))
    overhead_min = rng.randint(3, 10)
    factor = rng.uniform(1.2, 3.0)
    deadline_min = math.ceil(factor * work_min) + overhead_min
    every_min = rng.choice([15, 20, 30, 45, 60])
    market = pick(rng, [(70, "spot-fallback"), (15, "spot"), (15, "on-demand")])
    types = pick(rng, [(50, ["p3.2xlarge"]), (20, ["p3.2xlarge", "p3.8xlarge"]),
                       (10, ["p3.8xlarge", "p3.16xlarge"]),
                       (10, ["p3.16xlarge"]),
                       (10, ["p2.8xlarge", "p2.16xlarge"])])
    kind = pick(rng, [(35, "any"), (30, "us"), (10, "eu"), (25, "one")])
    regions = {"any": None, "us": US, "eu": EU,
               "one": [rng.choice(US + EU)]}[kind]
    allowed = [r for r in (regions or US + EU)
               if any(od_price(r, t) is not None for t in types)]
    if not allowed:  # a single region that sells none of the types
        allowed = US
        regions = US
    elif regions is not None:
        regions = allowed
    budget = None
    if rng.random() < 0.25:
        cheapest = min(od_price(r, t) * (work_min / SPEED[t] + overhead_min) / 60
                       for r in allowed for t in types
                       if od_price(r, t) is not None)
        lo, hi = (1.1, 1.5) if market == "on-demand" else (0.45, 1.0)
        budget = cheapest * rng.uniform(lo, hi)
    latest = window_min - deadline_min
    submit = start + datetime.timedelta(minutes=rng.randint(0, max(0, latest)))
    lines = [
        "    submit: %s" % fmt_time(submit),
        "    run: [python, train.py]",
        "    work: %s" % fmt_dur_min(work_min),
        "    deadline: %s" % fmt_dur_min(deadline_min),
        "    restart_overhead: %dm" % overhead_min,
        "    market: %s" % market,
        "    resources:",
        "      instance_types: [%s]" % ", ".join(types),
    ]
    if regions is not None:
        lines.append("      regions: [%s]" % ", ".join(regions))
    lines.append("    checkpoint:")
    lines.append("      every: %s" % fmt_dur_min(every_min))
    if budget is not None:
        lines.append("    budget: %.2f USD" % budget)
    return submit, "\n".join(lines)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jobs", type=int, default=1000)
    ap.add_argument("--days", type=float, default=90)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--start", default="2019-12-23T04:00:00Z")
    ap.add_argument("-o", "--output", default="-")
    a = ap.parse_args(argv)
    start = datetime.datetime.strptime(a.start, "%Y-%m-%dT%H:%M:%SZ")
    window_min = int(a.days * 24 * 60)
    if a.jobs < 1 or window_min < 4 * 24 * 60:
        ap.error("need --jobs >= 1 and --days >= 4 (a 24h job may need 3 days)")
    rng = random.Random(a.seed)
    jobs = sorted((job(rng, start, window_min) for _ in range(a.jobs)),
                  key=lambda j: j[0])
    out = [
        "# Generated by bench/gen_workload.py --jobs %d --days %g --seed %d "
        "--start %s" % (a.jobs, a.days, a.seed, a.start),
        "# for the shipped AWS p2/p3 trace; do not edit, regenerate.",
        "defaults:",
        "  resources:",
        "    providers: [aws]",
        "  checkpoint:",
        "    signal: SIGUSR1",
        "    grace: 90s",
        "jobs:",
    ]
    out += ["  - name: job-%04d\n%s" % (i, text)
            for i, (_, text) in enumerate(jobs)]
    data = "\n".join(out) + "\n"
    if a.output == "-":
        sys.stdout.write(data)
    else:
        with open(a.output, "w", encoding="utf-8", newline="\n") as f:
            f.write(data)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
