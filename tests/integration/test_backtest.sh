#!/usr/bin/env bash
# `ebb backtest` as a real process on the shipped data: the JSON it prints,
# determinism, costs against on-demand and the oracle, the table, and bad
# input (exit 2 with file:line).
. "$(dirname "$0")/lib.sh"

ROOT=${EBB_SOURCE_ROOT:?EBB_SOURCE_ROOT is set by meson}
PRICES=$ROOT/data/traces/aws_spot_gpu_p2p3_6regions_2019-12-20_2020-02-29.csv
AVAIL=$ROOT/data/availability_aws_2020-03.csv
CATALOG=$ROOT/data/catalog.csv
WORKLOAD=$ROOT/examples/jobs/workload-small.yaml
BAD=$ROOT/tests/data/engine

# The shipped traces come from different periods (prices to February 2020,
# availability from March): replayed over the prices, as asked.
bt() { "$EBB" backtest --prices "$PRICES" --availability "$AVAIL" --align-availability \
        --catalog "$CATALOG" --workload "$WORKLOAD" "$@"; }

# Each run takes about a second: run them all at once, then check.
declare -A RUNS=(
    [od1]="--policy on-demand --json"
    [od2]="--policy on-demand --json"
    [gr1]="--policy greedy --json"
    [gr2]="--policy greedy --json"
    [up1]="--policy uniform-progress --json"
    [up2]="--policy uniform-progress --json"
    [hz1]="--policy greedy --json --preemption-hazard 0.05 --seed 7"
    [hz2]="--policy greedy --json --preemption-hazard 0.05 --seed 7"
    [hz8]="--policy greedy --json --preemption-hazard 0.05 --seed 8"
    [table]="--policy greedy"
)
pids=""
for k in "${!RUNS[@]}"; do
    # shellcheck disable=SC2086
    { bt ${RUNS[$k]} >"$TMP/$k.out" 2>"$TMP/$k.err"; echo $? >"$TMP/$k.rc"; } &
    pids="$pids $!"
done
# shellcheck disable=SC2086
wait $pids
for k in $(printf '%s\n' "${!RUNS[@]}" | sort); do
    check "backtest ${RUNS[$k]} exits 0" test "$(cat "$TMP/$k.rc")" = 0
done

# pycheck NAME FILE PYTHON: passes when PYTHON (with d = the JSON in FILE)
# prints nothing; what it prints is the diagnostic.
pycheck() {
    local name=$1 file=$2 code=$3 msg
    msg=$(python3 - "$file" <<EOF 2>&1
import json, re, sys
d = json.load(open(sys.argv[1]))
jobs = d["jobs"]
$code
EOF
)
    if [ -z "$msg" ]; then ok "$name"; else not_ok "$name" "$msg"; fi
}

for k in od1 gr1 up1 hz1; do
    pycheck "$k: every required field, with the right types" "$TMP/$k.out" '
iso = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{3})?Z$")
for key, t in [("policy", str), ("jobs", list), ("total_cost_usd", float),
               ("total_on_demand_cost_usd", float), ("total_oracle_cost_usd", float)]:
    if not isinstance(d.get(key), t): print("top-level", key, repr(d.get(key)))
if len(jobs) != 10: print("jobs:", len(jobs))
for j in jobs:
    for key, t in [("name", str), ("policy", str), ("cost_usd", float),
                   ("on_demand_cost_usd", float), ("oracle_cost_usd", float),
                   ("deadline_met", bool),
                   ("preemptions", int), ("restarts", int)]:
        v = j.get(key)
        if not isinstance(v, t) or (t is int and isinstance(v, bool)):
            print(j.get("name"), key, repr(v))
    if isinstance(j.get("finished_at"), str) and not iso.match(j["finished_at"]):
        print(j["name"], "finished_at not ISO-8601 UTC:", j["finished_at"])
    budget = j.get("budget_usd")
    if budget is not None and j["cost_usd"] > budget:
        print(j["name"], "cost", j["cost_usd"], "> budget", budget)
    # A job whose budget cannot pay for what the policy chose is paused with
    # its checkpoint instead (the on-demand policy on a budget set for spot),
    # and ends deadline_missed once its deadline passes.
    if j.get("state") in ("paused", "waiting", "deadline_missed") and budget is not None:
        if j.get("finished_at") is not None: print(j["name"], "paused but finished")
        continue
    if not isinstance(j.get("finished_at"), str): print(j["name"], "finished_at", j.get("finished_at"))
    if j.get("state") != "succeeded" or not j.get("deadline_met"):
        print(j["name"], j.get("state"), j.get("deadline_met"))'
    pycheck "$k: costs at least the oracle, totals add up" "$TMP/$k.out" '
for j in jobs:
    if j["cost_usd"] < j["oracle_cost_usd"] - 0.01:
        print(j["name"], "cost", j["cost_usd"], "< oracle", j["oracle_cost_usd"])
    if j["oracle_cost_usd"] <= 0 or j["oracle_cost_usd"] > j["on_demand_cost_usd"] + 0.01:
        print(j["name"], "oracle", j["oracle_cost_usd"], "on-demand", j["on_demand_cost_usd"])
for tot, key in [("total_cost_usd", "cost_usd"),
                 ("total_on_demand_cost_usd", "on_demand_cost_usd"),
                 ("total_oracle_cost_usd", "oracle_cost_usd")]:
    s = sum(j[key] for j in jobs)
    if abs(d[tot] - s) > 1e-5: print(tot, d[tot], "!= sum", s)'
done
check "policy is named" test "$(json_get "$(cat "$TMP/gr1.out")" 'd["policy"]')" = greedy
check "jobs run with it" test "$(json_get "$(cat "$TMP/up1.out")" \
    'set(j["policy"] for j in d["jobs"])')" = "{'uniform-progress'}"

# The on-demand policy pays what on-demand costs, plus checkpoint stalls
# (30 s per checkpoint, at most 2% here); its two spot-only jobs
# (eval-nightly-fra, hpo-trial-17) stay on spot and cost far less.
pycheck "on-demand policy costs within 3% of on_demand_cost_usd" "$TMP/od1.out" '
for j in jobs:
    if j["state"] != "succeeded": continue
    r = j["cost_usd"] / j["on_demand_cost_usd"]
    spot_only = j["name"] in ("eval-nightly-fra", "hpo-trial-17")
    if spot_only and r > 0.5: print(j["name"], "spot-only job at", r)
    if not spot_only and not (1.0 <= r <= 1.03): print(j["name"], r)'
pycheck "the on-demand policy stops the two jobs whose budgets cannot pay on-demand" "$TMP/od1.out" '
paused = sorted(j["name"] for j in jobs if j["state"] != "succeeded")
if paused != ["bert-finetune-a", "segformer-ohio"]: print(paused)'
pycheck "greedy saves against on-demand" "$TMP/gr1.out" '
if not d["total_cost_usd"] < 0.5 * d["total_on_demand_cost_usd"]: print(d["total_cost_usd"])'

# Determinism: byte for byte, for every policy, also with random
# preemptions; another seed changes the run.
for p in od gr up hz; do
    check "$p: two runs give identical output" cmp -s "$TMP/${p}1.out" "$TMP/${p}2.out"
done
check "another seed gives another run" test "$(cat "$TMP/hz1.out")" != "$(cat "$TMP/hz8.out")"
pycheck "lost time: none without a restart, at least a 5m overhead per restart" "$TMP/hz1.out" '
for j in jobs:
    lost = j.get("lost_hours")
    if not isinstance(lost, float): print(j["name"], "lost_hours", lost); continue
    if j["restarts"] == 0 and lost != 0: print(j["name"], "lost", lost, "without a restart")
    if lost < j["restarts"] * 5 / 60 - 1e-9: print(j["name"], "lost", lost, "for", j["restarts"], "restarts")'
pycheck "the hazard preempts someone" "$TMP/hz1.out" '
if sum(j["preemptions"] for j in jobs) == 0: print("no preemptions")
if d["seed"] != 7: print("seed", d["seed"])'

# The table: a header row, one row per job, a summary line.
T=$(cat "$TMP/table.out")
HEAD=$(printf '%s\n' "$T" | head -n 1)
check "table header" contains "$HEAD" "JOB"
for col in POLICY COST ON-DEMAND ORACLE SAVED DEADLINE PREEMPT RESTARTS FINISHED; do
    check "table header has $col" contains "$HEAD" "$col"
done
check "table has a row per job" test "$(printf '%s\n' "$T" | grep -c ' greedy ')" -eq 10
LAST=$(printf '%s\n' "$T" | tail -n 1)
check "summary mentions saved" contains "$LAST" "saved"
check "summary mentions oracle" contains "$LAST" "oracle"
check "summary starts with the policy" contains "$LAST" "greedy: "

# Bad input: exit 2, and the message names the file (and line) at fault.
expect_exit 2 "price CSV with a missing column" "$EBB" backtest \
    --prices "$BAD/prices_missing_column.csv" --catalog "$CATALOG" --workload "$WORKLOAD"
check "missing column: file:line" contains "$ERR" "prices_missing_column.csv:1: header has 6 columns"
expect_exit 2 "unsorted price CSV" "$EBB" backtest \
    --prices "$BAD/prices_unsorted.csv" --catalog "$CATALOG" --workload "$WORKLOAD"
check "unsorted: file:line" contains "$ERR" "prices_unsorted.csv:4: row is earlier"
expect_exit 2 "unknown instance type" bt --workload "$BAD/workload_unknown_type.yaml"
check "unknown type: file:line" contains "$ERR" "workload_unknown_type.yaml:8: job typo-job: unknown instance type \"p3.2xlarg\""
expect_exit 2 "a job that can never finish" bt --workload "$BAD/workload_never.yaml"
check "never finishes: file:line" contains "$ERR" "workload_never.yaml:5: job slow-k80 can never finish"
# A hazard that would keep the backtest relaunching for minutes, and a
# price that would round to 0, are refused with the reason (#16 point 8).
expect_exit 2 "--preemption-hazard 1e9 is refused" bt --preemption-hazard 1e9
check "... with the allowed range" contains "$ERR" \
    "preemption_hazard: 1e+09 is outside the allowed range (from 0 to 10 preemptions per spot instance-hour"
{ head -n 1 "$PRICES"; sed -n 2p "$PRICES" | sed 's/,[^,]*$/,0.0000004/'; } >"$TMP/tiny.csv"
expect_exit 2 "a price below a micro-unit is refused" "$EBB" backtest \
    --prices "$TMP/tiny.csv" --catalog "$CATALOG" --workload "$WORKLOAD"
check "... not rounded to 0" contains "$ERR" \
    "tiny.csv:2: price_usd_per_hour: \"0.0000004\" is below 0.000001"
expect_exit 2 "missing --workload" "$EBB" backtest --prices "$PRICES" --catalog "$CATALOG"
check "missing --workload is named" contains "$ERR" "--workload is required"
check "nothing on stdout for bad input" test -z "$OUT"
for what in prices catalog workload availability; do
    expect_exit 2 "nonexistent --$what file" bt "--$what" "$TMP/no-such-$what.csv"
    check "nonexistent --$what file is named" contains "$ERR" "$TMP/no-such-$what.csv"
done

# A predictable daily cycle (synthetic trace): the forecaster learns it and
# trough waits for the cheap night hours; deadline, which does not time
# prices, pays the day rate. Every deadline is met either way.
for pol in trough deadline; do
    expect_exit 0 "daily cycle: backtest --policy $pol" "$EBB" backtest \
        --prices "$BAD/prices_daily_cycle.csv" --catalog "$CATALOG" \
        --workload "$BAD/workload_daily_cycle.yaml" --policy "$pol" --json
    printf '%s\n' "$OUT" >"$TMP/daily-$pol.out"
done
pycheck "daily cycle: trough waits for the trough and meets every deadline" "$TMP/daily-trough.out" '
dl = json.load(open(sys.argv[1].replace("daily-trough", "daily-deadline")))
for j in jobs:
    if not j["deadline_met"]: print(j["name"], "missed its deadline")
if not d["total_cost_usd"] < 0.5 * dl["total_cost_usd"]:
    print("trough", d["total_cost_usd"], "vs deadline", dl["total_cost_usd"])
if not d["total_cost_usd"] <= 1.05 * d["total_oracle_cost_usd"]:
    print("trough", d["total_cost_usd"], "vs oracle", d["total_oracle_cost_usd"])'

# Figures that must not mislead (#16 point 9). An on-demand job submitted
# before the trace starts is priced at the catalog's list price, never 0;
# a job still running when the backtest ends shows what it spent so far
# (its instance's accrued time included) and no saving; percentages in the
# JSON are rounded to hundredths, as written.
cat >"$TMP/early.yaml" <<'EOF'
jobs:
  - name: early
    submit: 2019-12-01T00:00:00Z
    run: [true]
    work: 2h
    deadline: 30d
    restart_overhead: 5m
    market: on-demand
    resources: {providers: [aws], instance_types: [p3.2xlarge], regions: [us-east-1]}
  - name: slow
    submit: 2020-01-06T00:00:00Z
    run: [true]
    work: 40h
    deadline: 41h
    market: spot
    resources: {providers: [aws], instance_types: [p2.xlarge], regions: [us-east-1]}
EOF
expect_exit 0 "backtest of an early and an unfinished job" "$EBB" backtest \
    --prices "$PRICES" --catalog "$CATALOG" --workload "$TMP/early.yaml" --json
printf '%s\n' "$OUT" >"$TMP/early.out"
pycheck "early job: on-demand priced at the list price, unfinished job: cost so far, no saving" "$TMP/early.out" '
e, s = jobs
# 2h of work plus 5m of overhead on p3.2xlarge at its 3.06 USD/h list price.
if e["on_demand_cost_usd"] != 6.375: print("early on-demand", e["on_demand_cost_usd"])
if e.get("savings_pct") != round(100 * (6.375 - e["cost_usd"]) / 6.375, 2): print("early saving", e.get("savings_pct"))
if s["state"] == "succeeded": print("slow finished")
if not s["cost_usd"] > 10: print("slow cost so far", s["cost_usd"])
if s.get("savings_pct", 0) is not None: print("slow has a saving", s.get("savings_pct"))
if d.get("savings_pct") != e.get("savings_pct"): print("total saving", d.get("savings_pct"), "is not over the finished job")'
check "percentages printed with at most two decimals" python3 -c '
import re, sys
t = open(sys.argv[1]).read()
bad = re.findall(r"\"savings_pct\": -?\d+\.\d{3,}", t)
sys.exit(1 if bad or "\"savings_pct\"" not in t else 0)' "$TMP/early.out"
expect_exit 0 "backtest table of an unfinished job" "$EBB" backtest \
    --prices "$PRICES" --catalog "$CATALOG" --workload "$TMP/early.yaml"
SLOW=$(printf '%s\n' "$OUT" | grep '^slow ')
check "unfinished job: no 0.00 cost, no saving" test -n "$SLOW" -a \
    "$(printf '%s' "$SLOW" | awk '{print $3, $8}')" != "0.00 100.0%"
check "unfinished job's SAVED is -" test "$(printf '%s' "$SLOW" | awk '{print $8}')" = "-"
check "summary says the saving is over the finished jobs" contains "$OUT" "on the finished jobs"

# The input as given (#18): no trace is reinterpreted.
# Without --align-availability the shipped traces do not cover the jobs.
expect_exit 2 "availability from another period is refused" "$EBB" backtest \
    --prices "$PRICES" --availability "$AVAIL" --catalog "$CATALOG" --workload "$WORKLOAD"
check "... naming the series and the gap" contains "$ERR" \
    "does not cover its window: series aws us-east-1"
check "... and saying how to replay it" contains "$ERR" "--align-availability"
check "nothing on stdout" test -z "$OUT"
# With it, stderr and the JSON say what was done.
pycheck "--align-availability is recorded in the JSON" "$TMP/gr1.out" '
a = d.get("availability_alignment") or {}
if a.get("start") != 1576823950000 or a.get("orig_first") != 1584266853000: print(a)
if a.get("period_ms") != 192562000 or a.get("end") != 1583020031000: print(a)'
check "... and said on stderr" contains "$(cat "$TMP/gr1.err")" \
    "--align-availability: $AVAIL (from 2020-03-15T10:07:33Z) is replayed from 2019-12-20T06:39:10Z, repeated every 2d5h29m22s until 2020-02-29T23:47:11Z"
# A spot job submitted before its prices begin is refused, not priced.
cat >"$TMP/before.yaml" <<'EOF'
jobs:
  - {name: early-spot, submit: "2019-12-01T00:00:00Z", run: [true], work: 2h,
     deadline: 30d, market: spot, resources: {instance_types: [p3.2xlarge], zones: [us-east-1b]}}
EOF
expect_exit 2 "a spot job before its prices begin is refused" "$EBB" backtest \
    --prices "$PRICES" --catalog "$CATALOG" --workload "$TMP/before.yaml"
check "... naming the series and the gap" contains "$ERR" \
    "job early-spot: $PRICES has no price for it at its submission 2019-12-01T00:00:00Z: its earliest series, aws us-east-1b p3.2xlarge, begins at 2019-12-22T21:33:11Z, 21d21h33m11s later"
sed -i 's/zones: \[us-east-1b\]/zones: [us-east-1a]/' "$TMP/before.yaml"
expect_exit 2 "a spot job no series of the trace may serve is refused" "$EBB" backtest \
    --prices "$PRICES" --catalog "$CATALOG" --workload "$TMP/before.yaml"
check "... saying it could never run" contains "$ERR" \
    "job early-spot: $PRICES has no price series this spot job may use"
# A price observed once holds to the end of the run: a one-row trace 30
# days before the job gives exactly what the same price repeated daily past
# the window gives, with availability (a drop mid-window) as recorded. The
# old reading ended the one-row trace at its row, found the availability
# "not overlapping" and moved it onto that row.
{ echo "timestamp_utc,provider,region,zone,instance_type,product,price_usd_per_hour"
  echo "2020-01-01T00:00:00Z,aws,us-east-1,us-east-1a,p3.2xlarge,Linux/UNIX,0.900000"
} >"$TMP/one-row.csv"
cp "$TMP/one-row.csv" "$TMP/repeated.csv"
for day in $(seq 2 40); do
    date -u -d "2020-01-01 +$((day - 1)) days" +"%Y-%m-%dT00:00:00Z,aws,us-east-1,us-east-1a,p3.2xlarge,Linux/UNIX,0.900000"
done >>"$TMP/repeated.csv"
{ echo "timestamp_utc,provider,zone,instance_type,available"
  echo "2020-01-31T00:00:00Z,aws,us-east-1a,p3.2xlarge,1"
  echo "2020-01-31T02:00:00Z,aws,us-east-1a,p3.2xlarge,0"
  echo "2020-01-31T05:00:00Z,aws,us-east-1a,p3.2xlarge,1"
  echo "2020-02-05T00:00:00Z,aws,us-east-1a,p3.2xlarge,1"
} >"$TMP/avail-window.csv"
cat >"$TMP/window.yaml" <<'EOF'
jobs:
  - {name: through-drop, submit: "2020-01-31T00:30:00Z", run: [true], work: 3h,
     deadline: 12h, market: spot, restart_overhead: 5m,
     checkpoint: {every: 30m}, resources: {instance_types: [p3.2xlarge]}}
EOF
for t in one-row repeated; do
    expect_exit 0 "backtest over the $t price trace" "$EBB" backtest --prices "$TMP/$t.csv" \
        --availability "$TMP/avail-window.csv" --catalog "$CATALOG" \
        --workload "$TMP/window.yaml" --policy greedy --json
    printf '%s\n' "$OUT" >"$TMP/$t.out"
done
pycheck "a one-row price trace holds to the end of the run" "$TMP/one-row.out" '
r = json.load(open(sys.argv[1].replace("one-row", "repeated")))
if d != r: print("one-row", d, "repeated", r)
if jobs[0]["preemptions"] < 1: print("the recorded drop did not preempt it", jobs[0])'
{ echo "timestamp_utc,provider,zone,instance_type,available"
  echo "2020-03-01T00:00:00Z,aws,us-east-1a,p3.2xlarge,1"
  echo "2020-03-02T00:00:00Z,aws,us-east-1a,p3.2xlarge,1"
} >"$TMP/avail-later.csv"
expect_exit 2 "availability that starts after the job window is refused" "$EBB" backtest \
    --prices "$TMP/repeated.csv" --availability "$TMP/avail-later.csv" \
    --catalog "$CATALOG" --workload "$TMP/window.yaml"
check "... naming the series and the gap" contains "$ERR" \
    "job through-drop: $TMP/avail-later.csv does not cover its window: series aws us-east-1a p3.2xlarge holds from 2020-03-01T00:00:00Z to 2020-03-02T00:00:00Z, and nothing is known from 2020-01-31T00:30:00Z to 2020-01-31T12:30:00Z"

finish
