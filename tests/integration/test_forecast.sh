#!/usr/bin/env bash
# ebb forecast: price forecasts from a CSV trace (in the CLI) and from
# ebbd's store (its forecast method), their JSON shape, the table, and bad
# input.
. "$(dirname "$0")/lib.sh"

DATA="$EBB_SOURCE_ROOT/tests/data/forecast_cli"
P="$DATA/prices.csv" # 3 series, 2020-01-01T00:00Z .. 2020-01-02T23:00Z
AT=2020-01-02T12:00:00Z

expect_exit 0 "ebb forecast --help" "$EBB" forecast --help
check "help shows usage" contains "$OUT" "Usage: ebb forecast"
check "help says the default --at" contains "$OUT" "end of the file's data"
expect_exit 0 "ebb --help lists forecast" "$EBB" --help
check "forecast is listed" contains "$OUT" "forecast"

# --- JSON shape -------------------------------------------------------------
expect_exit 0 "forecast --json from a trace" "$EBB" forecast --prices "$P" --at "$AT" --json
J1=$OUT
# py NAME EXPR [JSON]: passes when the Python expression is true, with d =
# the JSON (default $J1; read from stdin: it may be larger than one
# argument may be).
py() {
    local name=$1 expr=$2
    if printf '%s' "${3:-$J1}" | python3 -c "import json,sys,datetime as dt
d=json.load(sys.stdin)
def ms(s):
    s=s.replace('Z','+00:00')
    return round(dt.datetime.fromisoformat(s).timestamp()*1000)
sys.exit(0 if ($expr) else 1)"; then ok "$name"; else not_ok "$name" "$expr"; fi
}
py "top level holds only forecasts" 'list(d.keys()) == ["forecasts"]'
py "one forecast per series" 'len(d["forecasts"]) == 3'
py "series keys" 'all(all(isinstance(f[k], str) for k in ("provider","region","zone","instance_type","product")) for f in d["forecasts"])'
py "series are the file's" 'sorted((f["zone"], f["instance_type"]) for f in d["forecasts"]) == [("us-east-1a","p3.2xlarge"),("us-east-1b","p3.2xlarge"),("us-west-2a","p2.xlarge")]'
py "point keys exactly t,p10,p50,p90" 'all(sorted(p.keys()) == ["p10","p50","p90","t"] for f in d["forecasts"] for p in f["points"])'
py "prices are numbers" 'all(isinstance(p[k], (int, float)) and not isinstance(p[k], bool) for f in d["forecasts"] for p in f["points"] for k in ("p10","p50","p90"))'
py "times are ISO-8601 UTC" 'all(isinstance(p["t"], str) and p["t"].endswith("Z") for f in d["forecasts"] for p in f["points"])'
py "24 points for 24h / 1h" 'all(len(f["points"]) == 24 for f in d["forecasts"])'
py "first point at at+step" 'all(ms(f["points"][0]["t"]) == ms("2020-01-02T13:00:00Z") for f in d["forecasts"])'
py "points one step apart" 'all(ms(b["t"]) - ms(a["t"]) == 3600000 for f in d["forecasts"] for a, b in zip(f["points"], f["points"][1:]))'
py "p10 <= p50 <= p90" 'all(p["p10"] <= p["p50"] <= p["p90"] for f in d["forecasts"] for p in f["points"])'
py "prices are USD per hour, not micros" 'all(0 < p["p50"] < 100 for f in d["forecasts"] for p in f["points"])'
py "flat series forecasts its price" '[p["p50"] for f in d["forecasts"] if f["instance_type"] == "p2.xlarge" for p in f["points"]] == [0.27] * 24'

expect_exit 0 "--horizon 6h --step 30m" "$EBB" forecast --prices "$P" --at "$AT" --horizon 6h --step 30m --json
py "12 points for 6h / 30m" 'all(len(f["points"]) == 12 for f in d["forecasts"])' "$OUT"
py "30m apart from at+30m" 'all(ms(p["t"]) == ms("2020-01-02T12:00:00Z") + (i + 1) * 1800000 for f in d["forecasts"] for i, p in enumerate(f["points"]))' "$OUT"

# Default --at with --prices: the end of the data plus 1 ms (times are
# shown in whole seconds).
expect_exit 0 "default --at" "$EBB" forecast --prices "$P" --json
py "default at is the last row + 1ms" 'all(f["points"][0]["t"] == "2020-01-03T00:00:00Z" for f in d["forecasts"])' "$OUT"

# Filters, as in ebb prices.
expect_exit 0 "--type filter" "$EBB" forecast --prices "$P" --at "$AT" --type p2.xlarge --json
py "--type keeps one series" '[f["instance_type"] for f in d["forecasts"]] == ["p2.xlarge"]' "$OUT"
expect_exit 0 "--zone and --provider filter" "$EBB" forecast --prices "$P" --at "$AT" --provider aws --zone us-east-1b --json
py "--zone keeps one series" '[f["zone"] for f in d["forecasts"]] == ["us-east-1b"]' "$OUT"
expect_exit 0 "--provider with no match" "$EBB" forecast --prices "$P" --at "$AT" --provider gcp --json
py "no match: no forecasts" 'd == {"forecasts": []}' "$OUT"

# --- only rows before --at count; same input, same output -------------------
python3 - "$P" "$TMP/changed.csv" <<'PY'
import sys
src, dst = sys.argv[1], sys.argv[2]
with open(src) as f, open(dst, "w") as g:
    for i, line in enumerate(f):
        cols = line.rstrip("\n").split(",")
        if i > 0 and cols[0] >= "2020-01-02T12:00:00Z":
            cols[6] = "9.99"
        g.write(",".join(cols) + "\n")
    g.write("2020-01-05T00:00:00Z,aws,us-east-1,us-east-1a,p3.2xlarge,Linux/UNIX,0.01\n")
PY
expect_exit 0 "forecast from changed future rows" "$EBB" forecast --prices "$TMP/changed.csv" --at "$AT" --json
check "rows at or after --at change nothing" test "$OUT" = "$J1"
expect_exit 0 "forecast again" "$EBB" forecast --prices "$P" --at "$AT" --json
check "deterministic" test "$OUT" = "$J1"

# --- table ------------------------------------------------------------------
expect_exit 0 "table output" "$EBB" forecast --prices "$P" --at "$AT"
TABLE=$OUT
check "table names the series" contains "$TABLE" "aws us-east-1 us-east-1a p3.2xlarge Linux/UNIX"
check "table shows the current price" contains "$TABLE" "now "
check "table has trough lines" test "$(printf '%s\n' "$TABLE" | grep -c '^  trough ')" -ge 3
check "table has one sparkline per series" test "$(printf '%s\n' "$TABLE" | grep -c '^  p50  [▁▂▃▄▅▆▇█]\{24\}  ')" -eq 3
check "flat series: flat sparkline" contains "$TABLE" "p50  ▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁  0.2700..0.2700 USD/h"
expect_exit 0 "table of a long horizon" "$EBB" forecast --prices "$P" --at "$AT" --horizon 7d --step 5m
check "sparkline stays one line of at most 72 blocks" test "$(printf '%s\n' "$OUT" | grep -c '^  p50  [▁▂▃▄▅▆▇█]\{72\}  ')" -eq 3

# --- bad input: exit 2 with a message naming the file:line or the flag -------
expect_exit 2 "missing file" "$EBB" forecast --prices "$TMP/nope.csv"
check "missing file is named" contains "$ERR" "nope.csv"
expect_exit 2 "unsorted file" "$EBB" forecast --prices "$DATA/unsorted.csv"
check "unsorted file names file:line" contains "$ERR" "unsorted.csv:3:"
expect_exit 2 "bad price" "$EBB" forecast --prices "$DATA/bad_price.csv"
check "bad price names file:line" contains "$ERR" "bad_price.csv:2:"
expect_exit 2 "bad --at" "$EBB" forecast --prices "$P" --at yesterday
check "bad --at is named" contains "$ERR" '--at: "yesterday" is not a time'
expect_exit 2 "--at without offset" "$EBB" forecast --prices "$P" --at 2020-01-02T12:00:00
check "--at without offset is named" contains "$ERR" "--at"
expect_exit 2 "bad --horizon" "$EBB" forecast --prices "$P" --horizon 24
check "bad --horizon is named" contains "$ERR" '--horizon: "24" is not a duration'
expect_exit 2 "bad --step" "$EBB" forecast --prices "$P" --step 0s
check "zero --step is named" contains "$ERR" "--step 0s"
expect_exit 2 "horizon shorter than step" "$EBB" forecast --prices "$P" --horizon 30m --step 1h
check "short horizon explained" contains "$ERR" "shorter than one step"
expect_exit 2 "more than 10000 points" "$EBB" forecast --prices "$P" --horizon 30d --step 1m
check "too many points explained" contains "$ERR" "more than 10000 points"
expect_exit 0 "exactly 10000 points" "$EBB" forecast --prices "$P" --type p2.xlarge --horizon 10000m --step 1m --json
py "10000 points" 'len(d["forecasts"][0]["points"]) == 10000' "$OUT"
expect_exit 2 "unknown option" "$EBB" forecast --frobnicate
expect_exit 2 "stray argument" "$EBB" forecast --prices "$P" extra

# --- from ebbd's store --------------------------------------------------------
S="$TMP/state"
expect_exit 1 "without ebbd" "$EBB" --state-dir "$S" forecast --at "$AT" --json
check "says ebbd is not running" contains "$ERR" "ebbd is not running"

printf 'providers:\n  sim:\n    prices: %s\n' "$P" >"$TMP/sim.yaml"
check "ebbd starts with the sim market" start_daemon "$S" --config "$TMP/sim.yaml"
# The sim's first poll stores the whole trace; wait until it has.
for _ in $(seq 1 100); do
    n=$("$EBB" --state-dir "$S" prices --json 2>/dev/null |
        python3 -c 'import json,sys; print(len(json.load(sys.stdin)["prices"]))' 2>/dev/null)
    [ "${n:-0}" -ge 3 ] && break
    sleep 0.05
done
check "the store holds the trace's 3 series" test "${n:-0}" -eq 3
expect_exit 0 "forecast --json from ebbd" "$EBB" --state-dir "$S" forecast --json --at "$AT"
J2=$OUT
py "ebbd: top level holds only forecasts" 'list(d.keys()) == ["forecasts"]' "$J2"
py "ebbd: one forecast per stored series" 'len(d["forecasts"]) == 3' "$J2"
py "ebbd: spot series" 'all(f.get("market") == "spot" for f in d["forecasts"])' "$J2"
py "ebbd: point keys exactly t,p10,p50,p90" 'all(sorted(p.keys()) == ["p10","p50","p90","t"] for f in d["forecasts"] for p in f["points"])' "$J2"
py "ebbd: 24 points from at+1h" 'all(len(f["points"]) == 24 and ms(f["points"][0]["t"]) == ms("2020-01-02T13:00:00Z") for f in d["forecasts"])' "$J2"
# The same history gives the same forecast, through ebbd or from the file.
if python3 -c 'import json,sys
a=json.loads(sys.argv[1]); b=json.loads(sys.argv[2])
key=lambda f: (f["provider"], f["region"], f["zone"], f["instance_type"], f["product"])
pa={key(f): f["points"] for f in a["forecasts"]}
pb={key(f): f["points"] for f in b["forecasts"]}
sys.exit(0 if pa == pb else 1)' "$J1" "$J2"; then ok "ebbd and the file agree"
else not_ok "ebbd and the file agree"; fi
expect_exit 0 "ebbd: filters" "$EBB" --state-dir "$S" forecast --json --at "$AT" --type p3.2xlarge --zone us-east-1a --horizon 2h --step 1h
py "ebbd: filtered to one series of 2 points" '[(f["zone"], len(f["points"])) for f in d["forecasts"]] == [("us-east-1a", 2)]' "$OUT"
expect_exit 0 "ebbd: table" "$EBB" --state-dir "$S" forecast --at "$AT"
check "ebbd: table has sparklines" test "$(printf '%s\n' "$OUT" | grep -c '^  p50  [▁▂▃▄▅▆▇█]')" -eq 3
check "ebbd: table has troughs" contains "$OUT" "  trough "
# ebbd's now is in 2026: four weeks before it hold no 2020 prices.
expect_exit 0 "ebbd: default --at is now" "$EBB" --state-dir "$S" forecast --json
py "ebbd: nothing stored in the last 28 days" 'd == {"forecasts": []}' "$OUT"
expect_exit 0 "ebbd: empty table" "$EBB" --state-dir "$S" forecast
check "ebbd: empty table says so" contains "$OUT" "no series to forecast"
expect_exit 2 "ebbd: bad --step" "$EBB" --state-dir "$S" forecast --step 1x
check "ebbd: bad --step named" contains "$ERR" "--step"
expect_exit 2 "ebbd: too many points" "$EBB" --state-dir "$S" forecast --horizon 30d --step 1m
# Raw API: params as strings work too; bad ones are bad_request.
api() {
    python3 -c 'import socket,sys
s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
s.sendall(sys.argv[2].encode() + b"\n"); s.shutdown(socket.SHUT_WR)
buf=b""
while not buf.endswith(b"\n"):
    chunk=s.recv(65536)
    if not chunk: break
    buf+=chunk
sys.stdout.write(buf.decode())' "$S/ebb.sock" "$1"
}
R=$(api "{\"id\":1,\"method\":\"forecast\",\"params\":{\"at\":\"$AT\",\"horizon\":\"3h\",\"step\":\"1h\",\"zone\":\"us-east-1b\"}}")
py "API: string params" 'len(d["result"]["forecasts"]) == 1 and len(d["result"]["forecasts"][0]["points"]) == 3' "$R"
R=$(api '{"id":2,"method":"forecast","params":{"step":"soon"}}')
py "API: bad step is bad_request" 'd["error"]["code"] == "bad_request" and "step" in d["error"]["message"]' "$R"
R=$(api '{"id":3,"method":"forecast","params":{"horizon":86400000,"step":0}}')
py "API: zero step is bad_request" 'd["error"]["code"] == "bad_request"' "$R"
R=$(api '{"id":4,"method":"forecast","params":{"at":1577966400000,"horizon":"7d","step":"1m"}}')
py "API: more than 10000 points is bad_request" 'd["error"]["code"] == "bad_request" and "10000" in d["error"]["message"]' "$R"
stop_daemon TERM
check "ebbd exits 0 after forecasts" test "$DAEMON_EXIT" -eq 0
check "loop closed cleanly" grep -q "stopped cleanly" "$S.log"

finish
