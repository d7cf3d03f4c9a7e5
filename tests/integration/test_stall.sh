#!/usr/bin/env bash
# A job that hangs on its first host (the stall guard, docs/agent.md) on the
# live sim market, instances as local processes run by fake_agent.py: its
# progress lines stop while its agent keeps heartbeating, ebbd checkpoints
# it, leaves the host out, says why in its event, and the job finishes on
# another host. What its progress lines showed is the learned speed that
# ebb prices and ebb job show report (docs/policies.md "Learned speed").
. "$(dirname "$0")/lib.sh"
here=$(cd "$(dirname "$0")" && pwd)

S="$TMP/state"
cat >"$TMP/ebb.yaml" <<YAML
providers:
  sim:
    prices: $EBB_SOURCE_ROOT/tests/data/engine/prices_flat.csv
  local:
    agent: $here/fake_agent.py
    disk: shared
run_on: {sim: local}
clock: {start: 2020-01-01T06:00:00Z, speed: 1200}
agent_api: {listen: 127.0.0.1:0, heartbeat: 1s, heartbeat_timeout: 8s}
YAML
# fake_agent.py adds 10% of the work every 1.5 s of wall time (30 min on
# this clock): 12 min of work per 30 min, a speed of 0.4 on a p3.2xlarge
# (1.0 in the catalog). Without stall_after the guard waits 4 x 30 min.
cat >"$TMP/job.yaml" <<YAML
name: hangs
run: [python3, train.py, --stall-at, "0.3"]
work: 2h
resources: {instance_types: [p3.2xlarge, p3.8xlarge]}
market: spot
checkpoint: {grace: 30s}
YAML
check "ebbd starts" start_daemon "$S" --config "$TMP/ebb.yaml"

expect_exit 0 "prices before any job" "$EBB" --state-dir "$S" prices --type p3.2xlarge --json
check "the catalog's speed" test "$(json_get "$OUT" '[(p["speed"], p["speed_source"]) for p in d["prices"] if p["market"] == "spot"]')" = "[(1.0, 'catalog')]"

expect_exit 0 "submit" "$EBB" --state-dir "$S" submit "$TMP/job.yaml"
ID=$OUT
# The guard is off until the first progress line.
shown=""
for _ in $(seq 1 200); do
    shown=$("$EBB" --state-dir "$S" job show "$ID" 2>/dev/null | grep "stall guard:" || true)
    [ -n "$shown" ] && break
    sleep 0.05
done
check "job show says where the guard stands" contains "$shown" "stall guard: o"
expect_exit 0 "job show (text) while it runs" "$EBB" --state-dir "$S" job show "$ID"
check "... and the speed it is planned with" contains "$OUT" "  speed:       "

state=""
for _ in $(seq 1 600); do
    state=$("$EBB" --state-dir "$S" job show "$ID" --json 2>/dev/null |
            python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])')
    [ "$state" = succeeded ] && break
    sleep 0.1
done
check "the job succeeds" test "$state" = succeeded
expect_exit 0 "job show" "$EBB" --state-dir "$S" job show "$ID" --json
J=$OUT
check "the event says it stalled" test "$(json_get "$J" 'sum(e["reason"].startswith("stalled: no progress for") for e in d["events"])')" = 1
check "... with the guard's wait, from its progress lines" contains "$J" ", from its progress lines); checkpointing, moving, leaving spot p3.2xlarge us-east-1a aws out for 24 h"
check "it ran on two hosts" test "$(json_get "$J" '[i["instance_type"] for i in d["instances"]]')" = "['p3.2xlarge', 'p3.8xlarge']"
check "it resumed from the checkpoint" test "$(json_get "$J" 'len(d["checkpoints"]) >= 1')" = True
check "all work saved" test "$(json_get "$J" 'd["work_done_ms"] == d["work_ms"]')" = True
check "the stall is logged" grep -q "job $ID: stalled: no progress" "$S.log"

expect_exit 0 "prices after the job" "$EBB" --state-dir "$S" prices --type p3.2xlarge --json
check "the stalled host's speed was measured" test "$(json_get "$OUT" '[p["speed_source"] for p in d["prices"] if p["market"] == "spot"]')" = "['measured']"
check "... from its progress lines" test "$(json_get "$OUT" '[p["speed_samples"] >= 1 for p in d["prices"] if p["market"] == "spot"]')" = "[True]"
check "... below the catalog's, toward 0.4" test "$(json_get "$OUT" '[0.4 < p["speed"] < 1.0 for p in d["prices"] if p["market"] == "spot"]')" = "[True]"

# ebbd's quote of the family's next job (ebb plan, docs/plan.md) runs it as
# slowly on the host as it was seen to run: later and dearer than the same
# job under a name that has no record there.
for name in hangs fresh; do
    printf 'name: %s\nrun: [true]\nwork: 2h\nresources: {instance_types: [p3.2xlarge]}\nmarket: spot\n' \
        "$name" >"$TMP/$name-plan.yaml"
done
expect_exit 0 "quote of the family's next job" "$EBB" --state-dir "$S" plan "$TMP/hangs-plan.yaml" --samples 4 --json
LEARNED=$OUT
expect_exit 0 "quote of a job of another family" "$EBB" --state-dir "$S" plan "$TMP/fresh-plan.yaml" --samples 4 --json
check "the family's quote runs at its learned speed: dearer" test "$(json_get "$LEARNED" "d['cost_usd']['p50'] > 1.1 * $(json_get "$OUT" 'd["cost_usd"]["p50"]')")" = True
check "... and later" test "$(json_get "$LEARNED" "d['finish']['p50'] > '$(json_get "$OUT" 'd["finish"]["p50"]')'")" = True

stop_daemon TERM
check "ebbd stops cleanly" test "$DAEMON_EXIT" = 0
finish
