#!/usr/bin/env bash
# End to end across two clouds: the real ebb-agent runs examples/train.py
# through ebbd (real clock) on the vast.ai and Alibaba markets of
# fake_clouds (the provider tests' fake vast.ai API and fake ECS endpoint,
# checking keys and signatures as they do there). run_on makes both
# markets' instances local processes; the billed instances live in the
# fakes. The job starts on the cheap vast.ai interruptible V100; once it has
# written periodic checkpoints the machine is outbid (stopped without
# notice); the job must resume from its latest checkpoint on an Alibaba
# spot V100 (priced in CNY, converted with currency_rates), finish with the
# model of an uninterrupted run bit for bit, and leave no process and no
# instance behind in either cloud.
# Usage: test_cross_provider.sh FAKE_CLOUDS (meson passes the program).
. "$(dirname "$0")/../integration/lib.sh"

FAKE_CLOUDS=$1
TRAIN="$EBB_SOURCE_ROOT/examples/train.py"
STEPS=400
SLEEP=0.05

# The reference run goes on beside the daemon's, to keep the test short.
python3 "$TRAIN" --out "$TMP/reference.json" --steps $STEPS --step-sleep $SLEEP \
    >"$TMP/reference.log" 2>&1 &
REFERENCE_PID=$!

export ALIBABA_CLOUD_ACCESS_KEY_ID=LTAI-ebb-e2e
export ALIBABA_CLOUD_ACCESS_KEY_SECRET=e2e-secret-not-real
export VAST_API_KEY=vast-e2e-key

"$FAKE_CLOUDS" "$TMP/ports.json" 2>"$TMP/fake_clouds.log" &
FAKE_PID=$!
DAEMON_PIDS="$DAEMON_PIDS $FAKE_PID"
for _ in $(seq 1 100); do
    [ -s "$TMP/ports.json" ] && break
    sleep 0.05
done
check "the fake clouds listen" test -s "$TMP/ports.json"
PORTS=$(cat "$TMP/ports.json" 2>/dev/null || echo '{}')
port() { json_get "$PORTS" "d.get('$1', 0)"; }
CONTROL="http://127.0.0.1:$(port control)"

# state PYTHON-EXPR: evaluates EXPR with d = the fakes' world now.
state() {
    json_get "$(curl -s "$CONTROL/state" || echo '{}')" "$1" 2>/dev/null
}
# job EXPR: evaluates EXPR with d = `ebb job show ID --json`.
job() {
    json_get "$("$EBB" --state-dir "$S" job show "$ID" --json 2>/dev/null || echo '{}')" \
        "$1" 2>/dev/null
}
# wait_for SECONDS COMMAND...: polls until the command succeeds.
wait_for() {
    local tries=$(($1 * 10)); shift
    for _ in $(seq 1 "$tries"); do
        "$@" && return 0
        sleep 0.1
    done
    return 1
}

S="$TMP/state"
cat >"$TMP/ebb.yaml" <<YAML
providers:
  vastai:
    api_url: http://127.0.0.1:$(port vast)
    gpu_names: ["Tesla V100"]
    image: ghcr.io/ebb/trainer-with-agent:test
    poll_interval: 1s
  alibaba:
    endpoint: http://127.0.0.1:$(port ecs)/
    regions: [cn-hangzhou]
    instance_types: [ecs.gn6v-c8g1.2xlarge]
    image_id: m-ebb-e2e
    security_group_id: sg-ebb-e2e
    vswitches: [cn-hangzhou-h=vsw-ebb-e2e]
    poll_interval: 1s
    history: 1h
  local: {disk: shared}   # no store: the checkpoint stays on this machine's disk
run_on: {vastai: local, alibaba: local}
currency_rates: {CNY: 0.14}
agent_api: {listen: 127.0.0.1:0, heartbeat: 1s}
YAML
cat >"$TMP/train.yaml" <<YAML
name: train-across-clouds
run: [python3, $TRAIN, --out, $TMP/model.json, --steps, "$STEPS", --step-sleep, "$SLEEP"]
work: 1m
resources: {gpu: {model: V100, count: 1}}
market: spot
checkpoint: {every: 2s, grace: 10s}
YAML
check "ebbd starts" start_daemon "$S" --config "$TMP/ebb.yaml"
expect_exit 0 "submit" "$EBB" --state-dir "$S" submit "$TMP/train.yaml"
ID=$OUT
[ -n "$ID" ] || finish

on_vast() {
    [ "$(job '(d["current"]["market_provider"], d["current"]["provider"])')" = \
        "('vastai', 'local')" ]
}
check "the first attempt runs on vast.ai" wait_for 30 on_vast
check "vast.ai rented one interruptible instance" \
    test "$(state 'd["vast"]["rents"] == 1 and d["vast"]["instances"][0]["is_bid"]')" = True
checkpoints() { [ "$(job 'len(d["checkpoints"])')" -ge "$1" ] 2>/dev/null; }
check "the job writes periodic checkpoints on vast.ai" wait_for 30 checkpoints 2
check "still on vast.ai" on_vast

expect_exit 0 "the vast.ai machine is outbid" curl -sf -X POST "$CONTROL/outbid"
check "one instance was outbid" test "$(json_get "$OUT" 'd["outbid"]')" = 1
preempted() { [ "$(job 'd["preemptions"] >= 1')" = True ]; }
check "ebbd sees the preemption" wait_for 20 preempted
on_alibaba() {
    [ "$(job '(d["current"]["market_provider"], d["current"]["provider"])')" = \
        "('alibaba', 'local')" ]
}
check "the next attempt runs on Alibaba" wait_for 30 on_alibaba
check "RunInstances asked for a spot instance" \
    test "$(state 'd["ecs"]["last_run"].get("SpotStrategy", "")')" = SpotAsPriceGo

finished() {
    case "$(job 'd["state"]')" in succeeded|failed|cancelled) return 0 ;; esac
    return 1
}
wait_for 60 finished
expect_exit 0 "job show" "$EBB" --state-dir "$S" job show "$ID" --json
J=$OUT
check "the training job succeeds" test "$(json_get "$J" 'd["state"]')" = succeeded
check "preempted once" test "$(json_get "$J" 'd["preemptions"]')" = 1
# Its two instances, both run by local: the outbid vast.ai machine billed in
# USD, then the Alibaba spot instance billed in CNY.
check "its first instance was the vast.ai machine, ended by the outbid" \
    test "$(json_get "$J" '[(i["instance_type"], i["currency"], "outbid" in i["end_reason"])
                            for i in d["instances"]][0]')" = "('V100x1', 'USD', True)"
check "its second instance was the Alibaba one, in CNY" \
    test "$(json_get "$J" '[(i["region"], i["instance_type"], i["currency"])
                            for i in d["instances"]][1:]')" = \
         "[('cn-hangzhou', 'ecs.gn6v-c8g1.2xlarge', 'CNY')]"
client_token_is_launch_token() {
    local sent want
    sent=$(state 'd["ecs"]["last_run"].get("ClientToken", "")')
    want=$(json_get "$J" 'd["instances"][1]["token"]' 2>/dev/null)
    [ -n "$sent" ] && [ "$sent" = "$want" ]
}
check "RunInstances carried its launch token as ClientToken" client_token_is_launch_token
expect_exit 0 "logs" "$EBB" --state-dir "$S" logs "$ID"
LOGS=$OUT
check "resumed from a checkpoint" \
    test "$(printf '%s\n' "$LOGS" | grep -c '^resuming at step')" = 1
# The step it resumed at is the one of the last checkpoint written before.
resumed_at_latest() {
    printf '%s\n' "$LOGS" | python3 -c '
import re, sys
last = None
for line in sys.stdin:
    m = re.match(r"checkpoint at step (\d+)", line)
    if m:
        last = int(m.group(1))
    m = re.match(r"resuming at step (\d+)", line)
    if m:
        sys.exit(0 if last is not None and last > 0 and int(m.group(1)) == last else 1)
sys.exit(1)'
}
check "it resumed at the latest periodic checkpoint" resumed_at_latest
check "the job finished in its log" contains "$LOGS" "done: $STEPS steps"
wait "$REFERENCE_PID"
check "the uninterrupted reference run succeeds" test $? = 0
check "the model equals the uninterrupted run's, bit for bit" \
    cmp "$TMP/reference.json" "$TMP/model.json"
check "no job process is left" test -z "$(pgrep -f "$TMP/model.json" || true)"

no_instances() {
    [ "$(state 'len(d["vast"]["instances"]) + len(d["ecs"]["instances"])')" = 0 ]
}
if wait_for 20 no_instances; then ok "no instance is left in either cloud"
else not_ok "no instance is left in either cloud" "the fakes: $(curl -s "$CONTROL/state")"
fi
check "the outbid vast.ai instance was destroyed" \
    test "$(state 'd["vast"]["deletes"] >= 1')" = True
check "vast.ai was rented only once" test "$(state 'd["vast"]["rents"]')" = 1
check "Alibaba launched once and deleted the instance" \
    test "$(state '(d["ecs"]["run_instances"], d["ecs"]["delete_instance"])')" = "(1, 1)"
check "no request had a bad signature or key" \
    test "$(state 'd["ecs"]["bad_signatures"] + d["vast"]["unauthorized"]')" = 0

stop_daemon TERM
check "ebbd stops cleanly" test "$DAEMON_EXIT" = 0
kill -TERM "$FAKE_PID"
wait "$FAKE_PID"
check "the fake clouds stop cleanly" test $? = 0
finish
