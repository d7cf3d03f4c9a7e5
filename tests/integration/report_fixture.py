#!/usr/bin/env python3
"""Fills an ebb.db (schema made by ebbd) with a week of history for the
report test: two spot series with a daily price cycle, an observed on-demand
price, jobs of two teams on spot and on-demand instances (some preempted),
their ledger rows, job events and a storage fee. Prints the figures the
report must show, computed here independently, as JSON.

Usage: report_fixture.py DB
"""
import json
import sqlite3
import sys

H = 3600 * 1000
MIN = 60 * 1000
T0 = 1790812800000  # 2026-10-01T00:00:00Z
OD = 3060000        # on-demand p3.2xlarge, micro-USD per hour


def spot_price(zone, hour):
    """A daily cycle (dear in the working day), a zone offset, and a little
    deterministic noise."""
    h = hour % 24
    base = 918000 + (420000 if 8 <= h < 19 else 0) + (60000 if zone == "b" else 0)
    noise = (hour * 7919 + (13 if zone == "b" else 0)) % 97 * 900
    return base + noise


def cost(rate, ms):
    return (rate * ms + 1800000) // 3600000  # half up, as ebb__cost_of


def main():
    db = sqlite3.connect(sys.argv[1])
    c = db.cursor()
    for zone in ("a", "b"):
        for hour in range(-24, 8 * 24):
            c.execute("INSERT INTO prices VALUES ('aws','us-east-1',?,'p3.2xlarge',"
                      "'','spot',?,?,'USD')",
                      ("us-east-1" + zone, T0 + hour * H, spot_price(zone, hour)))
    c.execute("INSERT INTO prices VALUES ('aws','us-east-1','','p3.2xlarge','',"
              "'on-demand',?,?,'USD')", (T0 - 24 * H, OD))

    # job, team, [(zone or None for on-demand, start h, end h, preempted)]
    jobs = [
        ("train-llm", "ml", [("a", 1, 30, True), ("b", 31.5, 70, False)]),
        ("sweep-01", "ml", [("a", 20, 26, False)]),
        ("sweep-02", "ml", [("b", 44, 52, True), ("a", 53, 60, False)]),
        ("eval-night", "cv", [("a", 96, 104, False), ("a", 120, 128, False)]),
        ("ft-vision", "cv", [(None, 130, 150, False)]),
        ("ablation", "cv", [("b", 75, 90, True), ("b", 91, 110, False)]),
    ]
    want = {"spend": 0, "on_demand": 0, "preemptions": 0, "rows": 0,
            "teams": {}, "restart_ms": 0, "checkpoint_ms": 0, "lost_ms": 0}
    for name, team, runs in jobs:
        c.execute("INSERT INTO jobs (id, name, owner_uid, team, spec_yaml,"
                  " spec_json, state, submitted_at, updated_at)"
                  " VALUES (?,?,1000,?,'{}','{}','succeeded',?,?)",
                  (name, name, team, T0, T0))
        seq = [(T0, None, "waiting")]
        for k, (zone, a, b, preempted) in enumerate(runs):
            token = "%s-a%d" % (name, k + 1)
            start, end = T0 + int(a * H), T0 + int(b * H)
            market = "spot" if zone else "on-demand"
            c.execute("INSERT INTO instances (token, job_id, provider, region,"
                      " zone, instance_type, market, state, requested_at,"
                      " started_at, ended_at, end_reason) VALUES"
                      " (?,?,'sim','us-east-1',?,'p3.2xlarge',?,'terminated',?,?,?,?)",
                      (token, name, "us-east-1" + zone if zone else "", market,
                       start, start, end,
                       "spot capacity reclaimed" if preempted else "released"))
            # A preempted instance saved its last checkpoint a minute before
            # it went; one the job left for another checkpointed as it
            # left. Time after the checkpoint, and the overhead of every
            # instance after the first, is lost: the same work on
            # on-demand would not have spent it.
            last = k == len(runs) - 1
            saved = end - MIN if preempted else end
            if not last:
                c.execute("INSERT INTO checkpoints (job_id, instance_token, at,"
                          " path, work_done_ms, complete) VALUES (?,?,?,?,0,1)",
                          (name, token, saved, "/ckpt/%s/%d" % (name, k)))
            t = start
            while t < end:
                nxt = min(end, (t // H + 1) * H, start + 5 * MIN if t < start + 5 * MIN else end)
                rate = spot_price(zone, (t - T0) // H) if zone else OD
                amount = cost(rate, nxt - t)
                kind = "overhead" if nxt <= start + 5 * MIN else "compute"
                c.execute("INSERT INTO ledger (job_id, instance_token, team,"
                          " provider, kind, start_at, end_at, rate_micros,"
                          " amount_micros, currency, note) VALUES"
                          " (?,?,?,'aws',?,?,?,?,?,'USD','p3.2xlarge')",
                          (name, token, team, kind, t, nxt, rate, amount))
                want["spend"] += amount
                if kind == "overhead":
                    useful = 0 if k > 0 else nxt - t
                else:
                    useful = max(0, min(nxt, end if last else saved) - t)
                want["lost_ms"] += nxt - t - useful
                if zone:
                    want["on_demand"] += cost(OD, useful)
                else:
                    want["on_demand"] += amount * useful // (nxt - t)
                want["rows"] += 1
                want["teams"][team] = want["teams"].get(team, 0) + amount
                if kind == "overhead":
                    want["restart_ms"] += nxt - t
                t = nxt
            seq.append((start, "waiting", "running"))
            if preempted:
                seq.append((end - 3 * MIN, "running", "checkpointing"))
                seq.append((end - 1 * MIN, "checkpointing", "running"))
                seq.append((end, "running", "preempted"))
                seq.append((end + MIN, "preempted", "waiting"))
                want["preemptions"] += 1
                want["checkpoint_ms"] += 2 * MIN
        seq.append((T0 + int(runs[-1][2] * H), "running", "succeeded"))
        for at, frm, to in seq:
            c.execute("INSERT INTO job_events (job_id, at, from_state, to_state,"
                      " reason) VALUES (?,?,?,?,'test')", (name, at, frm, to))
    c.execute("INSERT INTO ledger (team, provider, kind, start_at, end_at,"
              " amount_micros, currency, note) VALUES ('ml','aws','fee',?,?,"
              "4200000,'USD','storage: checkpoints')", (T0 + 160 * H, T0 + 160 * H))
    # A resume download out of the store's region (engine_transfer.c's
    # egress row: kind fee, note egress).
    c.execute("INSERT INTO ledger (team, provider, kind, start_at, end_at,"
              " rate_micros, amount_micros, currency, note) VALUES ('ml','aws',"
              "'fee',?,?,20000,180000,'USD','egress')", (T0 + 161 * H, T0 + 161 * H))
    want["fee_storage"] = 4200000
    want["fee_egress"] = 180000
    fees = want["fee_storage"] + want["fee_egress"]
    want["spend"] += fees
    want["on_demand_basis"] = want["spend"] - fees
    want["rows"] += 2
    want["teams"]["ml"] += fees
    db.commit()
    print(json.dumps(want))


main()
