#!/usr/bin/env bash
# ebbd's Prometheus endpoint (docs/metrics.md): off unless metrics.listen is
# set; GET /metrics in the text format with jobs by state, spend and
# savings, price polls, preemptions, checkpoint durations and loop lag;
# anything else 404. The job runs on the sim market as a local process
# with fake_agent.py, as in test_jobs.sh.
. "$(dirname "$0")/lib.sh"
here=$(cd "$(dirname "$0")" && pwd)

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
PORT=$(free_port)
M="http://127.0.0.1:$PORT"

# A price step every 10 clock minutes (a second here), so that the
# sim market announces changes and ebbd polls it again and again.
python3 - "$TMP/prices.csv" <<'PY'
import sys
with open(sys.argv[1], "w") as f:
    f.write("timestamp_utc,provider,region,zone,instance_type,product,price_usd_per_hour\n")
    for i in range(2 * 24 * 6):
        t = "2020-01-%02dT%02d:%02d:00Z" % (1 + i // 144, i // 6 % 24, i % 6 * 10)
        f.write("%s,aws,us-east-1,us-east-1a,p3.2xlarge,Linux/UNIX,%.2f\n" % (t, 0.90 + i % 2 / 100))
PY

write_config() { # FILE [METRICS-SECTION]
    cat >"$1" <<YAML
providers:
  sim:
    prices: $TMP/prices.csv
    preempt_after: 1h
    notice_lead: 2m
  local:
    agent: $here/fake_agent.py
    disk: shared   # no store: checkpoints stay on this machine's disk
run_on: {sim: local}
clock: {start: 2020-01-01T06:00:00Z, speed: 600}
agent_api: {listen: 127.0.0.1:0, heartbeat: 1s}
$2
YAML
}
cat >"$TMP/job.yaml" <<YAML
name: fake-train
run: [python3, train.py]
work: 2h
resources: {instance_types: [p3.2xlarge]}
market: spot
checkpoint: {grace: 30s}
YAML

# metric TEXT NAME{LABELS}: the sample's value, or nothing.
metric() {
    printf '%s\n' "$1" | awk -v k="$2" '$1 == k { print $2 }'
}
scrape() { curl -sf "$M/metrics"; }

# Every sample belongs to a family announced by HELP and TYPE before it,
# counters end in _total, and histogram buckets are cumulative and end in
# +Inf equal to _count.
valid_exposition() {
    python3 - "$1" <<'PY'
import re, sys
typed, helped, buckets = {}, set(), {}
for line in sys.argv[1].splitlines():
    if line.startswith("# HELP "):
        helped.add(line.split()[2]); continue
    if line.startswith("# TYPE "):
        _, _, name, kind = line.split(); typed[name] = kind
        assert name in helped, "TYPE before HELP: " + name
        if kind == "counter": assert name.endswith("_total"), name
        continue
    m = re.fullmatch(r'([a-z_]+)(\{[^}]*\})? (\S+)', line)
    assert m, "not a sample: " + line
    name, value = m.group(1), float(m.group(3))
    base = re.sub(r"_(bucket|sum|count)$", "", name)
    assert name in typed or (base in typed and typed[base] == "histogram"), \
        "sample before its TYPE: " + line
    if name.endswith("_bucket"):
        b = buckets.setdefault(base, [])
        assert not b or value >= b[-1], "buckets not cumulative: " + line
        b.append(value)
    if name.endswith("_count") and base in buckets:
        assert buckets[base][-1] == value, "+Inf != _count for " + base
PY
}

# ---- off unless configured -------------------------------------------------
write_config "$TMP/off.yaml" ""
check "ebbd starts without metrics:" start_daemon "$TMP/off" --config "$TMP/off.yaml"
code=$(curl -s -o /dev/null -w '%{http_code}' "$M/metrics")
check "nothing listens on the metrics port" test "$code" = 000
check "no metrics endpoint logged" test -z "$(grep 'metrics at' "$TMP/off.log" || true)"
stop_daemon TERM
check "ebbd without metrics stops cleanly" test "$DAEMON_EXIT" = 0

# ---- bad addresses ---------------------------------------------------------
write_config "$TMP/bad.yaml" "metrics: {listen: localhost}"
expect_exit 2 "a bad metrics.listen is refused" "$EBBD" --state-dir "$TMP/bad" --config "$TMP/bad.yaml"
check "it says where and what" contains "$ERR" "bad.yaml:12: metrics.listen: \"localhost\" is not an address and port"

# ---- on --------------------------------------------------------------------
S="$TMP/state"
write_config "$TMP/ebb.yaml" "metrics: {listen: 127.0.0.1:$PORT}"
check "ebbd starts with metrics:" start_daemon "$S" --config "$TMP/ebb.yaml"
check "it logs where metrics are" grep -q "metrics at $M/metrics" "$S.log"

headers=$(curl -s -D - -o "$TMP/first" "$M/metrics")
T=$(cat "$TMP/first")
check "GET /metrics answers 200" contains "$headers" "HTTP/1.1 200"
check "in the text format 0.0.4" contains "$headers" "Content-Type: text/plain; version=0.0.4; charset=utf-8"
check "the text keeps the format's rules" valid_exposition "$T"
check "build info" test "$(metric "$T" 'ebb_build_info{version="'"$("$EBB" --version | awk '{print $NF}')"'"}')" = 1
for family in ebb_jobs ebb_spend_total ebb_savings ebb_price_polls_total \
              ebb_price_poll_errors_total ebb_preemptions_total \
              ebb_checkpoint_duration_seconds ebb_event_loop_lag_seconds; do
    check "family $family" contains "$T" "# TYPE $family "
done
check "no jobs yet" test -z "$(printf '%s\n' "$T" | grep '^ebb_jobs{' || true)"
check "sim polled" test "$(metric "$T" 'ebb_price_polls_total{provider="sim"}')" -ge 1
check "local listed" test -n "$(metric "$T" 'ebb_price_polls_total{provider="local"}')"
check "no poll errors" test "$(metric "$T" 'ebb_price_poll_errors_total{provider="sim"}')" = 0
check "no preemptions yet" test "$(metric "$T" 'ebb_preemptions_total{provider="sim"}')" = 0

# Polls go on: the sim market announces each price step, ebbd polls it.
polls0=$(metric "$T" 'ebb_price_polls_total{provider="sim"}')
polls1=$polls0
for _ in $(seq 1 100); do
    polls1=$(metric "$(scrape)" 'ebb_price_polls_total{provider="sim"}')
    [ "$polls1" -gt "$polls0" ] && break
    sleep 0.1
done
check "poll counter increases" test "$polls1" -gt "$polls0"
expect_exit 0 "ebb providers --json" "$EBB" --state-dir "$S" providers --json
P=$OUT
check "agrees with ebb providers" test "$(json_get "$P" '[p for p in d["providers"] if p["name"] == "sim"][0]["polls"]')" -ge "$polls1"

# The loop lag probe runs every 100 ms.
sleep 0.5
T=$(scrape)
check "loop lag observed" test "$(metric "$T" 'ebb_event_loop_lag_seconds_count')" -ge 3
check "loop lag is small" test "$(json_get "$(metric "$T" 'ebb_event_loop_lag_seconds_sum')" "d / $(metric "$T" 'ebb_event_loop_lag_seconds_count') < 0.5")" = True

# Jobs by state.
expect_exit 0 "submit" "$EBB" --state-dir "$S" submit "$TMP/job.yaml"
ID=$OUT
T=$(scrape)
check "one job counted" test "$(printf '%s\n' "$T" | awk '/^ebb_jobs\{/ { n += $2 } END { print n }')" = 1
state=$("$EBB" --state-dir "$S" job show "$ID" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])')
for _ in $(seq 1 600); do
    state=$("$EBB" --state-dir "$S" job show "$ID" --json 2>/dev/null |
            python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])')
    [ "$state" = succeeded ] && break
    sleep 0.1
done
check "the job succeeds" test "$state" = succeeded
expect_exit 0 "job show" "$EBB" --state-dir "$S" job show "$ID" --json
J=$OUT
T=$(scrape)
check "the job counted as succeeded" test "$(metric "$T" 'ebb_jobs{state="succeeded"}')" = 1
check "no other state counted" test "$(printf '%s\n' "$T" | grep -c '^ebb_jobs{')" = 1
check "preemptions as the job counted them" test "$(metric "$T" 'ebb_preemptions_total{provider="sim"}')" = "$(json_get "$J" 'd["preemptions"]')"
# An instance lives an hour of clock (6 s here); the fake job needs 8 s.
check "preemptions happened" test "$(metric "$T" 'ebb_preemptions_total{provider="sim"}')" -ge 1
ck=$(metric "$T" 'ebb_checkpoint_duration_seconds_count')
check "checkpoints observed" test "$ck" -ge 1
check "no more than the job's checkpoints" test "$ck" -le "$(json_get "$J" 'len(d["checkpoints"])')"
# fake_agent.py reports 1 ms for each: all in the first bucket.
check "durations as the agent reported them" test "$(metric "$T" 'ebb_checkpoint_duration_seconds_bucket{le="1"}')" = "$ck"
check "their sum" test "$(json_get "$(metric "$T" 'ebb_checkpoint_duration_seconds_sum')" "abs(d - $ck * 0.001) < 1e-9")" = True

# Spend and savings come from a snapshot at most 5 s old: wait for it.
want_spend=$(json_get "$J" 'd["spent_micros"] / 1e6')
spend=""
for _ in $(seq 1 150); do
    T=$(scrape)
    spend=$(metric "$T" 'ebb_spend_total{currency="USD"}')
    [ -n "$spend" ] && [ "$(json_get "$spend" "abs(d - $want_spend) < 1e-6")" = True ] && break
    sleep 0.1
done
check "spend is the ledger's sum" test "$(json_get "${spend:-0}" "abs(d - $want_spend) < 1e-6 and d > 0")" = True
expect_exit 0 "report over all time" "$EBB" --state-dir "$S" report --since 2000-01-01 --until 2030-01-01 --json
R=$OUT
# On-demand p3.2xlarge costs more than 3x this spot price: savings > 0.
check "savings as ebb report computes them" test "$(json_get "$(metric "$T" 'ebb_savings{currency="USD"}')" "abs(d - $(json_get "$R" 'd["total"]["savings_micros"]') / 1e6) < 1e-6 and d > 0")" = True
check "the scrape still keeps the rules" valid_exposition "$T"

# Other paths and methods.
code=$(curl -s -o /dev/null -w '%{http_code}' "$M/")
check "/ is 404" test "$code" = 404
code=$(curl -s -o /dev/null -w '%{http_code}' "$M/metricsx")
check "/metricsx is 404" test "$code" = 404
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "$M/metrics")
check "POST /metrics is 405" test "$code" = 405

# A second ebbd cannot take the same port: exit 1, saying why.
expect_exit 1 "port in use refused" "$EBBD" --state-dir "$TMP/second" --config "$TMP/ebb.yaml"
check "says it cannot listen" contains "$ERR" "cannot listen on 127.0.0.1:$PORT for metrics"

stop_daemon TERM
check "ebbd stops cleanly" test "$DAEMON_EXIT" = 0
check "and said so" grep -q "stopped cleanly" "$S.log"
code=$(curl -s -o /dev/null -w '%{http_code}' "$M/metrics")
check "the port is closed after" test "$code" = 000
finish
