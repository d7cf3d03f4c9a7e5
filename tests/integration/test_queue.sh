#!/usr/bin/env bash
# `ebb queue` through ebbd (docs/budgets.md "Priorities and fair share",
# docs/api.md "queue"): a team whose max_gpus one running job fills keeps
# three jobs of 4 GPUs waiting; the queue lists them highest priority
# first (high, then normal, then low, though submitted in the other
# order), each saying it waits for the quota and why; when the running
# job goes, the high one takes its place. --team keeps one team; an unknown
# team and a bad option are refused. The sim market runs the instances
# itself (no agent), on the real clock, so the running job does not end.
. "$(dirname "$0")/lib.sh"

S="$TMP/state"
ME=$(id -un)
cat >"$TMP/ebb.yaml" <<YAML
providers:
  sim:
    prices: $EBB_SOURCE_ROOT/tests/data/engine/prices_flat.csv
clock: {start: 2020-01-01T06:00:00Z}
agent_api: {listen: 127.0.0.1:0}
default_policy: greedy
teams:
  ml:
    members: [$ME]
    max_gpus: 4
  other:
    members: [$ME]
YAML
job() {
    cat <<YAML
name: $1
run: [python3, train.py]
work: 100h
market: spot
team: ml
resources: {gpu: {count: 4}}
checkpoint: {every: 30m, grace: 5s}
YAML
    [ -n "$2" ] && echo "priority: $2"
}
# Urgent: no job of the team may take its place (docs/budgets.md,
# "Preemption by checkpoint").
job first urgent >"$TMP/first.yaml"
job low low >"$TMP/low.yaml"
job norm "" >"$TMP/norm.yaml"
job high 800 >"$TMP/high.yaml"
check "ebbd starts" start_daemon "$S" --config "$TMP/ebb.yaml"

state() {
    "$EBB" --state-dir "$S" job show "$1" --json 2>/dev/null |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])'
}
expect_exit 0 "submit the first job" "$EBB" --state-dir "$S" submit "$TMP/first.yaml"
FIRST=$OUT
st=""
for _ in $(seq 1 200); do
    st=$(state "$FIRST")
    [ "$st" = running ] && break
    sleep 0.05
done
check "the first job runs" test "$st" = running
expect_exit 0 "submit the low job" "$EBB" --state-dir "$S" submit "$TMP/low.yaml"
LOW=$OUT
expect_exit 0 "submit the normal job" "$EBB" --state-dir "$S" submit "$TMP/norm.yaml"
NORM=$OUT
expect_exit 0 "submit the high job" "$EBB" --state-dir "$S" submit "$TMP/high.yaml"
HIGH=$OUT

# Each waits for the quota once ebbd has looked at it.
Q=""
for _ in $(seq 1 200); do
    "$EBB" --state-dir "$S" queue --json >"$TMP/q.json" 2>/dev/null && Q=$(cat "$TMP/q.json")
    [ -n "$Q" ] && [ "$(json_get "$Q" '[r["waiting_for"] for r in d["queue"]]')" = "['quota', 'quota', 'quota']" ] && break
    sleep 0.05
done
check "three jobs wait for the quota" \
    test "$(json_get "$Q" '[r["waiting_for"] for r in d["queue"]]')" = "['quota', 'quota', 'quota']"
check "highest priority first, though submitted last" \
    test "$(json_get "$Q" '[r["id"] for r in d["queue"]]')" = "['$HIGH', '$NORM', '$LOW']"
check "places count from 1" test "$(json_get "$Q" '[r["place"] for r in d["queue"]]')" = "[1, 2, 3]"
check "priorities and their names" \
    test "$(json_get "$Q" '[(r["priority"], r["priority_name"]) for r in d["queue"]]')" = "[(800, None), (500, 'normal'), (250, 'low')]"
check "the first waits for the team's GPUs" \
    test "$(json_get "$Q" 'd["queue"][0]["waiting_reason"]')" = "team ml's max_gpus 4 is in use (4 GPUs on 1 instance; p3.8xlarge has 4)"
# The other two were looked at when they came, before the high one.
check "so do the others" \
    test "$(json_get "$Q" 'all(r["waiting_reason"] == d["queue"][0]["waiting_reason"] for r in d["queue"])')" = True
check "rows name the job, team, state and owner" \
    test "$(json_get "$Q" '(d["queue"][0]["name"], d["queue"][0]["team"], d["queue"][0]["state"], d["queue"][0]["owner_uid"] == '"$(id -u)"')')" = "('high', 'ml', 'waiting', True)"
check "no fair share: usage 0" test "$(json_get "$Q" 'd["queue"][0]["fair_share_usage"]')" = 0.0
check "the running job is not listed" \
    test "$(json_get "$Q" '"'"$FIRST"'" in [r["id"] for r in d["queue"]]')" = False

expect_exit 0 "queue (text)" "$EBB" --state-dir "$S" queue
check "the table's header" contains "$OUT" "WAITS FOR"
check "the table's first row" contains "$OUT" "1  $HIGH  high"
check "the table shows the reason" contains "$OUT" "quota      team ml's max_gpus 4 is in use"
check "the low job's priority by name" contains "$OUT" "  low   "
expect_exit 0 "queue --team ml" "$EBB" --state-dir "$S" queue --team ml --json
check "--team ml keeps its jobs" test "$(json_get "$OUT" 'len(d["queue"])')" = 3
expect_exit 0 "queue --team other" "$EBB" --state-dir "$S" queue --team other
check "another team's queue is empty" contains "$OUT" "no job waits"
expect_exit 1 "an unknown team is refused" "$EBB" --state-dir "$S" queue --team nope
check "saying where teams are" contains "$ERR" "no team nope"
expect_exit 2 "a bad option is refused" "$EBB" --state-dir "$S" queue --bogus
check "with the usage" contains "$ERR" "Usage: ebb queue"

# Cancelling the running job frees the GPUs: the high job takes them.
expect_exit 0 "cancel the first job" "$EBB" --state-dir "$S" cancel "$FIRST"
st=""
for _ in $(seq 1 200); do
    st=$(state "$HIGH")
    [ "$st" = running ] && break
    sleep 0.05
done
check "the high job runs next" test "$st" = running
check "the others still wait" test "$(state "$NORM") $(state "$LOW")" = "waiting waiting"
finish
