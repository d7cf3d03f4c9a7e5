#!/usr/bin/env bash
# End to end: the real ebb-agent runs examples/train.py through ebbd on the
# live sim market (accelerated clock, every spot instance preempted an hour
# of market time after its launch), instances as local processes. The job
# must be preempted at least twice, resume from its checkpoints each time,
# finish, and produce the same model, bit for bit, as an uninterrupted run.
# The agents reach ebbd over TLS (agent_api.tls: on, its own certificate
# and pin), as cloud agents do.
# Usage: test_resume.sh [relative]. With "relative" the spec says
# checkpoint: {dir: ckpt}, submitted from a project directory while ebbd
# runs in another: the checkpoints must lie below the project directory,
# where the job runs, and every resume must find them there (#16 point 7).
# The job has no checkpoint store, so its local instances share this
# machine's disk (disk: shared); test_ckpt_store.py resumes through a store
# from private disks.
. "$(dirname "$0")/../integration/lib.sh"
MODE=${1:-absolute}

TRAIN="$EBB_SOURCE_ROOT/examples/train.py"
STEPS=1000
SLEEP=0.02

# Its output (progress lines) goes to a file, not into the TAP stream.
reference_run() {
    python3 "$TRAIN" --out "$TMP/reference.json" --steps $STEPS --step-sleep $SLEEP \
        >"$TMP/reference.log"
}
check "uninterrupted reference run" reference_run

S="$TMP/state"
cat >"$TMP/ebb.yaml" <<YAML
providers:
  sim:
    prices: $EBB_SOURCE_ROOT/tests/data/engine/prices_flat.csv
    preempt_after: 2h
    notice_lead: 2m
  local: {disk: shared}   # no store: checkpoints stay on this machine's disk
run_on: {sim: local}
clock: {start: 2020-01-01T06:00:00Z, speed: 1200}
agent_api: {listen: 127.0.0.1:0, heartbeat: 1s, tls: "on"}
YAML
cat >"$TMP/train.yaml" <<YAML
name: train-linear
run: [python3, $TRAIN, --out, $TMP/model.json, --steps, "$STEPS", --step-sleep, "$SLEEP"]
work: 8h
resources: {instance_types: [p3.2xlarge]}
market: spot
checkpoint: {grace: 60s}
YAML
PROJECT="$TMP/project"
mkdir -p "$PROJECT" "$TMP/ebbd-cwd"
if [ "$MODE" = relative ]; then
    echo "checkpoint: {grace: 60s, dir: ckpt}" >"$PROJECT/train.yaml"
    grep -v '^checkpoint:' "$TMP/train.yaml" >>"$PROJECT/train.yaml"
    mv "$PROJECT/train.yaml" "$TMP/train.yaml"
fi
# ebbd (and the agents it starts) run in a directory of their own; the job
# is submitted from the project directory, as a user submits from theirs.
cd "$TMP/ebbd-cwd" || exit 1
check "ebbd starts" start_daemon "$S" --config "$TMP/ebb.yaml"
check "agents reach ebbd over TLS" grep -q "agents reach ebbd at https://" "$S.log"
cd "$PROJECT" || exit 1
expect_exit 0 "submit" "$EBB" --state-dir "$S" submit "$TMP/train.yaml"
ID=$OUT
cd "$TMP" || exit 1

state=""
for _ in $(seq 1 1200); do
    state=$("$EBB" --state-dir "$S" job show "$ID" --json 2>/dev/null |
            python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])')
    case "$state" in succeeded|failed|cancelled) break ;; esac
    sleep 0.1
done
check "the training job succeeds" test "$state" = succeeded
expect_exit 0 "job show" "$EBB" --state-dir "$S" job show "$ID" --json
J=$OUT
check "preempted at least twice" test "$(json_get "$J" 'd["preemptions"] >= 2')" = True
check "checkpointed before each preemption" \
    test "$(json_get "$J" 'len(d["checkpoints"]) >= d["preemptions"]')" = True
expect_exit 0 "logs" "$EBB" --state-dir "$S" logs "$ID"
check "resumed from a checkpoint each time" \
    test "$(printf '%s\n' "$OUT" | grep -c '^resuming at step')" -ge 2
check "the job finished in its log" contains "$OUT" "done: $STEPS steps"
check "the model equals the uninterrupted run's, bit for bit" \
    cmp "$TMP/reference.json" "$TMP/model.json"
check "no job process is left" test -z "$(pgrep -f "$TMP/model.json" || true)"
if [ "$MODE" = relative ]; then
    check "the spec's checkpoint dir is resolved below the project directory" \
        test "$(json_get "$J" 'd["spec"]["checkpoint"]["dir"]')" = "$PROJECT/ckpt"
    check "every checkpoint was recorded below the project directory" \
        test "$(json_get "$J" 'all(c["path"].startswith("'"$PROJECT"'/ckpt/")
                                   for c in d["checkpoints"])')" = True
    check "the checkpoints are there" test -n "$(ls -A "$PROJECT/ckpt")"
    check "nothing was written where ebbd runs" test -z "$(ls -A "$TMP/ebbd-cwd")"
fi

stop_daemon TERM
check "ebbd stops cleanly" test "$DAEMON_EXIT" = 0
finish
