#!/usr/bin/env bash
# Budgets through ebbd (docs/budgets.md): a job capped below its work ends
# budget_exhausted with its checkpoint, `ebb job show` says what it spent
# and why, and `ebb budget` shows the team's cap, spend and what a running
# job has committed, and the team's quotas next to what its instances hold
# (max_gpus, max_burn, the submitting user's own limits). The sim market
# runs the instances itself (no agent), at 0.90 USD/h, on a clock 1200
# times as fast as the wall clock.
. "$(dirname "$0")/lib.sh"

S="$TMP/state"
ME=$(id -un)
cat >"$TMP/ebb.yaml" <<YAML
providers:
  sim:
    prices: $EBB_SOURCE_ROOT/tests/data/engine/prices_flat.csv
clock: {start: 2020-01-01T06:00:00Z, speed: 1200}
agent_api: {listen: 127.0.0.1:0}
default_policy: greedy
teams:
  ml:
    members: [alice, $ME]
    budget: 50 USD
    max_gpus: 8
    max_burn: 20 USD/h
    users:
      $ME: {budget: 20 USD/month, max_gpus: 4}
      alice: {max_gpus: 2}
YAML
job() {
    cat <<YAML
name: $1
run: [python3, train.py]
work: $2
restart_overhead: 5m
market: spot
team: ml
budget: $3
checkpoint: {every: 30m, grace: 60s}
YAML
}
job small 10h "1.50 USD" >"$TMP/small.yaml"
# The big job runs through every check below: its cap lasts 16 h of
# sim time (48 s of wall time).
job big 100h "15 USD" >"$TMP/big.yaml"
check "ebbd starts" start_daemon "$S" --config "$TMP/ebb.yaml"

expect_exit 0 "submit the small job" "$EBB" --state-dir "$S" submit "$TMP/small.yaml"
SMALL=$OUT
state() {
    "$EBB" --state-dir "$S" job show "$1" --json 2>/dev/null |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])'
}
st=""
for _ in $(seq 1 300); do
    st=$(state "$SMALL")
    [ "$st" = budget_exhausted ] && break
    sleep 0.1
done
check "the small job ends budget_exhausted" test "$st" = budget_exhausted
expect_exit 0 "job show --json" "$EBB" --state-dir "$S" job show "$SMALL" --json
J=$OUT
check "it spent under its cap" test "$(json_get "$J" '0 < d["spent_micros"] <= 1500000')" = True
check "its checkpoint is kept" test "$(json_get "$J" 'd["work_done_ms"] > 0 and max(c["work_done_ms"] for c in d["checkpoints"]) == d["work_done_ms"]')" = True
expect_exit 0 "job show" "$EBB" --state-dir "$S" job show "$SMALL"
check "job show says what it spent and why it stopped" contains "$OUT" "budget: exhausted, spent "
check "job show names the cap" contains "$OUT" "of 1.50 USD"

expect_exit 0 "submit the big job" "$EBB" --state-dir "$S" submit "$TMP/big.yaml"
BIG=$OUT
for _ in $(seq 1 100); do
    [ "$(state "$BIG")" = running ] && break
    sleep 0.05
done
expect_exit 0 "budget --json" "$EBB" --state-dir "$S" budget --json
B=$OUT
check "one team" test "$(json_get "$B" '[t["team"] for t in d["teams"]]')" = "['ml']"
check "the team's cap" test "$(json_get "$B" 'd["teams"][0]["cap_micros"]')" = 50000000
check "the team spent what the small job did, at least" \
    test "$(json_get "$B" "d['teams'][0]['spent_micros'] >= $(json_get "$J" 'd["spent_micros"]')")" = True
check "the running job has committed something" \
    test "$(json_get "$B" 'd["teams"][0]["committed_micros"] > 0')" = True
check "left = cap - spent - committed" \
    test "$(json_get "$B" 'all(t["left_micros"] == t["cap_micros"] - t["spent_micros"] - t["committed_micros"] for t in d["teams"] + d["jobs"])')" = True
check "only the unfinished capped job is listed" \
    test "$(json_get "$B" '[j["id"] for j in d["jobs"]]')" = "['$BIG']"
check "its commitment fits its cap" \
    test "$(json_get "$B" 'd["jobs"][0]["spent_micros"] + d["jobs"][0]["committed_micros"] <= 15000000')" = True
check "the month" test "$(json_get "$B" 'd["month"]')" = 2020-01
check "the team's max_gpus" test "$(json_get "$B" 'd["teams"][0]["max_gpus"]')" = 8
check "the running job's p3.2xlarge holds 1 GPU" \
    test "$(json_get "$B" 'd["teams"][0]["instances"] == 1 and d["teams"][0]["gpus_in_use"] == 1')" = True
check "the team's max_burn, USD per hour" \
    test "$(json_get "$B" 'd["teams"][0]["max_burn_micros"]')" = 20000000
check "its burn is the instance's price" \
    test "$(json_get "$B" 'd["teams"][0]["burn_micros"]')" = 900000
check "the users with limits, as listed" \
    test "$(json_get "$B" '[u["name"] for u in d["teams"][0]["users"]]')" = "['$ME', 'alice']"
check "the submitter's cap, GPUs and spend" \
    test "$(json_get "$B" "(lambda u, t: u['cap_micros'] == 20000000 and u['max_gpus'] == 4 and u['gpus_in_use'] == t['gpus_in_use'] and u['spent_micros'] == t['spent_micros'] and u['left_micros'] == 20000000 - u['spent_micros'] - u['committed_micros'])(d['teams'][0]['users'][0], d['teams'][0])")" = True
check "a user with GPUs only has no cap" \
    test "$(json_get "$B" "(lambda u: u['cap_micros'] is None and u['max_gpus'] == 2 and u['gpus_in_use'] == 0 and u['spent_micros'] == 0)(d['teams'][0]['users'][1])")" = True

expect_exit 0 "budget (text)" "$EBB" --state-dir "$S" budget --team ml
check "the table shows the team and its cap" contains "$OUT" "50.00 USD"
check "the table lists the big job" contains "$OUT" "$BIG"
check "the table shows the quotas" contains "$OUT" "/h / 20.00 USD/h"
check "the table shows the submitter's limits" contains "$OUT" "$ME"
# A job that would take the submitter past their max_gpus in the team
# waits, `ebb job show` saying why (the big job holds 1 of their 4 GPUs;
# p3.8xlarge has 4).
cat >"$TMP/quad.yaml" <<YAML
name: quad
run: [python3, train.py]
work: 10h
market: spot
team: ml
resources: {gpu: {count: 4}}
checkpoint: {every: 30m, grace: 60s}
YAML
expect_exit 0 "submit a 4-GPU job" "$EBB" --state-dir "$S" submit "$TMP/quad.yaml"
QUAD=$OUT
why=""
for _ in $(seq 1 100); do
    why=$("$EBB" --state-dir "$S" job show "$QUAD" --json 2>/dev/null |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["waiting_reason"] or "")')
    case $why in *max_gpus*) break ;; esac
    sleep 0.05
done
check "it waits for the submitter's GPUs, saying so" \
    test "$why" = "user $ME's max_gpus 4 in team ml is in use (1 GPU on 1 instance; p3.8xlarge has 4)"
expect_exit 0 "job show" "$EBB" --state-dir "$S" job show "$QUAD"
check "job show prints the reason" contains "$OUT" "waiting:     user $ME's max_gpus 4"

expect_exit 1 "an unknown team is refused" "$EBB" --state-dir "$S" budget --team nope
check "saying where teams are" contains "$ERR" "no team nope"
expect_exit 2 "a bad option is refused" "$EBB" --state-dir "$S" budget --bogus

stop_daemon TERM
check "ebbd stops cleanly" test "$DAEMON_EXIT" -eq 0
finish
