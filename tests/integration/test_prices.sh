#!/usr/bin/env bash
# ebb prices and ebb prices --history against ebbd on the built-in
# configuration: the sim market replaying the shipped AWS trace from
# 2020-01-06, whose first poll stores the trace's history up to then. The
# history must be exactly the trace's observations in the window.
. "$(dirname "$0")/lib.sh"

TRACE="$EBB_DATA_DIR/traces/aws_spot_gpu_p2p3_6regions_2019-12-20_2020-02-29.csv"

# trace_points SINCE UNTIL REGION ZONE TYPE: "time price" of the trace's
# observations of that series in [SINCE, UNTIL) (ISO-8601 UTC).
trace_points() {
    python3 - "$TRACE" "$@" <<'PY'
import csv, sys
from datetime import datetime
path, since, until, region, zone, itype = sys.argv[1:]
t = lambda s: datetime.fromisoformat(s.replace("Z", "+00:00"))
for r in csv.DictReader(open(path)):
    if (r["region"], r["zone"], r["instance_type"]) == (region, zone, itype) \
            and t(since) <= t(r["timestamp_utc"]) < t(until):
        print(r["timestamp_utc"], round(float(r["price_usd_per_hour"]) * 1e6))
PY
}
# answer_points JSON: "time price" of the answer's single series.
answer_points() {
    json_get "$1" '"\n".join("%s %d" % (p["observed_at"], p["price_micros"]) for p in d["series"][0]["points"])'
}

expect_exit 0 "ebb prices --help" "$EBB" prices --help
check "help shows --history" contains "$OUT" "ebb prices --history [--since S] [--until U]"

S="$TMP/state"
check "ebbd starts on the built-in configuration" start_daemon "$S"
E=("$EBB" --state-dir "$S")
ONE=(--provider aws --type p3.2xlarge --zone us-east-1b)

expect_exit 0 "latest price" "${E[@]}" prices "${ONE[@]}" --json
L=$OUT
check "one series" test "$(json_get "$L" 'len(d["prices"])')" = 1
# No job has run: the catalog's speed (p3.2xlarge, one V100: 1.0).
check "the catalog's speed" test "$(json_get "$L" '[d["prices"][0][k] for k in ("speed","speed_source","speed_samples")]')" = "[1.0, 'catalog', 0]"

# The default window: the week before ebbd's now.
expect_exit 0 "history of one series" "${E[@]}" prices --history "${ONE[@]}" --json
H=$OUT
since=$(json_get "$H" 'd["since"]')
until=$(json_get "$H" 'd["until"]')
check "a week by default" test "$(json_get "$H" 'd["until_ms"] - d["since_ms"]')" = 604800001
check "the window's times in whole seconds" test "$(json_get "$H" 'd["since"][:19] + "Z" == d["since"] and len(d["since"]) == 20')" = True
check "one series in the history" test "$(json_get "$H" 'len(d["series"])')" = 1
check "the series is named" test "$(json_get "$H" '[d["series"][0][k] for k in ("provider","region","zone","instance_type","market","currency")]')" = "['aws', 'us-east-1', 'us-east-1b', 'p3.2xlarge', 'spot', 'USD']"
want=$(trace_points "$since" "$until" us-east-1 us-east-1b p3.2xlarge)
check "the trace's observations in the window" test "$(answer_points "$H")" = "$want"
check "a week of them" test "$(printf '%s\n' "$want" | wc -l)" -ge 20
check "ending with the latest price" test "$(json_get "$H" 'd["series"][0]["points"][-1]["price_micros"]')" = "$(json_get "$L" 'd["prices"][0]["price_micros"]')"
check "at the latest time" test "$(json_get "$H" 'd["series"][0]["points"][-1]["observed_at"]')" = "$(json_get "$L" 'd["prices"][0]["observed_at"]')"

# An explicit window; until is excluded (here it is an observation's time).
cut=$(trace_points 2020-01-02T00:00:00Z 2020-01-04T00:00:00Z us-east-1 us-east-1b p3.2xlarge | sed -n 5p | cut -d' ' -f1)
expect_exit 0 "history in a window" "${E[@]}" prices --history "${ONE[@]}" --since 2020-01-02 --until "$cut" --json
W=$OUT
check "the window is as asked" test "$(json_get "$W" 'd["since"] + " " + d["until"]')" = "2020-01-02T00:00:00Z $cut"
check "exactly the trace's rows before until" test "$(answer_points "$W")" = "$(trace_points 2020-01-02T00:00:00Z "$cut" us-east-1 us-east-1b p3.2xlarge)"
check "four of them" test "$(json_get "$W" 'len(d["series"][0]["points"])')" = 4

# Without filters: every series, each once, its rows together and in order.
expect_exit 0 "history of every series" "${E[@]}" prices --history --since 2020-01-03 --until 2020-01-04 --json
A=$OUT
check "many series" test "$(json_get "$A" 'len(d["series"]) > 10')" = True
check "each series once" test "$(json_get "$A" 'len(set((s["region"],s["zone"],s["instance_type"],s["product"],s["market"]) for s in d["series"])) == len(d["series"])')" = True
check "points in time order" test "$(json_get "$A" 'all([p["observed_at"] for p in s["points"]] == sorted(p["observed_at"] for p in s["points"]) for s in d["series"])')" = True
check "points inside the window" test "$(json_get "$A" 'all("2020-01-03" <= p["observed_at"] < "2020-01-04" for s in d["series"] for p in s["points"])')" = True
n_all=$(json_get "$A" 'sum(len(s["points"]) for s in d["series"])')
# Every trace row of the day is there (the sim also records a price where
# its availability data changes a series, so there may be more).
check "the trace's rows of the day all there" python3 - "$TRACE" "$A" <<'PY'
import csv, json, sys
got = {(s["zone"], s["instance_type"], p["observed_at"], p["price_micros"])
       for s in json.loads(sys.argv[2])["series"] for p in s["points"]}
want = {(r["zone"], r["instance_type"], r["timestamp_utc"],
         round(float(r["price_usd_per_hour"]) * 1e6))
        for r in csv.DictReader(open(sys.argv[1]))
        if "2020-01-03" <= r["timestamp_utc"] < "2020-01-04"}
sys.exit(0 if want and want <= got else 1)
PY

# The table: one row per observation, under the latest's header.
expect_exit 0 "history table" "${E[@]}" prices --history --since 2020-01-03 --until 2020-01-04
check "table header" contains "$(printf '%s\n' "$OUT" | head -n 1)" "PROVIDER  REGION"
check "one row per observation" test "$(printf '%s\n' "$OUT" | wc -l)" = $((n_all + 1))
check "rows show the price" contains "$OUT" "$(json_get "$A" '"%g" % d["series"][0]["points"][0]["price"]')"
expect_exit 0 "history table, no match" "${E[@]}" prices --history --type nosuch.type
check "says nothing was observed" contains "$OUT" "no prices observed in that window"
expect_exit 0 "history json, no match" "${E[@]}" prices --history --type nosuch.type --json
check "no series" test "$(json_get "$OUT" 'len(d["series"])')" = 0

# Bad input: exit 2 with a reason, and ebbd goes on.
expect_exit 2 "--since without --history" "${E[@]}" prices --since 1d
check "says --history is needed" contains "$ERR" "--since and --until need --history"
expect_exit 2 "bad --since" "${E[@]}" prices --history --since yesterday
check "says what since accepts" contains "$ERR" "since: not a duration back from now"
expect_exit 2 "bad --until" "${E[@]}" prices --history --until 7d
check "until is not a duration" contains "$ERR" "until:"
expect_exit 2 "window backwards" "${E[@]}" prices --history --since 2020-01-05 --until 2020-01-01
check "says since must come first" contains "$ERR" "since must come before until"
expect_exit 0 "ebbd still answers" "${E[@]}" prices "${ONE[@]}"

stop_daemon TERM
check "ebbd stops cleanly" test "$DAEMON_EXIT" = 0
finish
