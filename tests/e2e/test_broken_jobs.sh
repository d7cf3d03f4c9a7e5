#!/usr/bin/env bash
# End to end: jobs that cannot run are never relaunched without bound
# (#16 point 3). ebbd runs its built-in configuration (the sim market, every
# instance a local process under the real ebb-agent) on a clock 720 times
# as fast as the wall clock:
#   - a typo in `run` and a working directory that is gone fail the job
#     after one launch, with the agent's exec error in `ebb job show` and
#     `ebb logs`, whatever max_retries says;
#   - a job that exits 1 every time with max_retries: 2 is launched
#     exactly 3 times, waits 1 and then 2 minutes (market time) between
#     them, and fails.
# Then a second ebbd whose local provider starts a stand-in agent that
# never reports: an agent that exits at once and one that hangs are each
# a failed start, and the job fails after 8 launches in a row.
. "$(dirname "$0")/../integration/lib.sh"

S="$TMP/state"
check "ebbd starts on its built-in configuration" start_daemon "$S" --clock-speed 720

# wait_ended ID: waits until job ID has ended (at most 60 s) and sets
# $JOB to its `job show --json`.
wait_ended() {
    local state=""
    for _ in $(seq 1 600); do
        JOB=$("$EBB" --state-dir "$S" job show "$1" --json 2>/dev/null)
        state=$(json_get "$JOB" 'd["state"]' 2>/dev/null)
        case "$state" in succeeded|failed|cancelled|budget_exhausted|deadline_missed) return 0 ;; esac
        sleep 0.1
    done
    return 1
}

# ondemand_job NAME RUN [MAX_RETRIES]: writes $TMP/NAME.yaml, a job of 1 h
# of work running RUN (a YAML list) on demand, where no spot preemption
# can add a launch of its own.
ondemand_job() {
    {
        printf 'name: %s\nrun: %s\nwork: 1h\n' "$1" "$2"
        [ -n "${3:-}" ] && printf 'max_retries: %s\n' "$3"
        printf 'market: on-demand\n'
        printf 'resources: {instance_types: [p3.2xlarge], regions: [us-east-1]}\n'
    } >"$TMP/$1.yaml"
}

# failed_after WHAT ID LAUNCHES: job ID (the WHAT job) ends, failed, after
# LAUNCHES launches; $JOB is its `job show --json`.
failed_after() {
    check "the $1 job ends" wait_ended "$2"
    check "the $1 job failed" test "$(json_get "$JOB" 'd["state"]')" = failed
    check "after $3 launches ($1)" test "$(json_get "$JOB" 'len(d["instances"])')" = "$3"
}

ondemand_job typo "[pyhton3, train.py]" 2
expect_exit 0 "submit a job whose program has a typo" "$EBB" --state-dir "$S" submit "$TMP/typo.yaml"
TYPO=$OUT
failed_after typo "$TYPO" 1
check "no retry was counted" test "$(json_get "$JOB" 'd["retries"]')" = 0
expect_exit 0 "job show" "$EBB" --state-dir "$S" job show "$TYPO"
check "job show gives the exec error" contains "$OUT" "cannot start the job: pyhton3: no such program on PATH"
expect_exit 0 "logs" "$EBB" --state-dir "$S" logs "$TYPO"
check "ebb logs gives the exec error" contains "$OUT" "ebb-agent: cannot start the job: pyhton3: no such program on PATH"

mkdir "$TMP/gone"
ondemand_job nodir "[python3, -c, \"print('never')\"]"
(cd "$TMP/gone" && "$EBB" --state-dir "$S" submit "$TMP/nodir.yaml") >"$TMP/nodir.id"
NODIR=$(cat "$TMP/nodir.id")
rmdir "$TMP/gone"
failed_after missing-workdir "$NODIR" 1
expect_exit 0 "job show" "$EBB" --state-dir "$S" job show "$NODIR"
check "job show names the missing directory" \
    contains "$OUT" "cannot start the job: workdir: $TMP/gone: No such file or directory"
expect_exit 0 "logs" "$EBB" --state-dir "$S" logs "$NODIR"
check "ebb logs names the missing directory" contains "$OUT" "workdir: $TMP/gone: No such file"

ondemand_job exit1 '[sh, -c, "echo trying; exit 1"]' 2
expect_exit 0 "submit a job that exits 1 every time" "$EBB" --state-dir "$S" submit "$TMP/exit1.yaml"
EXIT1=$OUT
failed_after exit-1 "$EXIT1" 3
check "2 retries counted" test "$(json_get "$JOB" 'd["retries"]')" = 2
# Each launch waits its backoff after the previous instance ended: 1 min,
# then 2 min, in market time.
GAPS=$(json_get "$JOB" '",".join(str(b["requested_at"] - a["ended_at"]) for a, b in zip(sorted(d["instances"], key=lambda i: i["requested_at"]), sorted(d["instances"], key=lambda i: i["requested_at"])[1:]))')
check "1 minute before the first retry ($GAPS ms)" test "${GAPS%%,*}" -ge 60000
check "2 minutes before the second ($GAPS ms)" test "${GAPS##*,}" -ge 120000
check "the waits say when the next try comes" \
    test "$(json_get "$JOB" 'sum(1 for e in d["events"] if "trying again at" in e["reason"])')" = 2
check "the end says how many retries" \
    test "$(json_get "$JOB" '"after 2 retries" in d["events"][-1]["reason"]')" = True
expect_exit 0 "logs" "$EBB" --state-dir "$S" logs "$EXIT1"
check "each run is in the log" test "$(printf '%s\n' "$OUT" | grep -c '^trying$')" = 3

stop_daemon TERM
check "ebbd stops cleanly" test "$DAEMON_EXIT" = 0

# An agent that never reports: a stand-in for ebb-agent that exits at once
# (mode "exit") or hangs (mode "hang").
cat >"$TMP/agent.sh" <<SH
#!/bin/sh
[ "\$(cat $TMP/agent.mode)" = exit ] && exit 3
exec sleep 600
SH
chmod +x "$TMP/agent.sh"
cat >"$TMP/ebb.yaml" <<YAML
providers:
  local: {agent: $TMP/agent.sh, price: 1 USD}
clock: {speed: 720}
agent_api: {listen: 127.0.0.1:0, heartbeat: 1s, heartbeat_timeout: 4s, enrol_ttl: 2s}
YAML
cat >"$TMP/local.yaml" <<YAML
name: unreported
run: [true]
work: 1h
market: on-demand
YAML
S2="$TMP/state2"
DAEMON_PID=""
check "ebbd starts with the stand-in agent" start_daemon "$S2" --config "$TMP/ebb.yaml"
S_SAVED=$S
S=$S2
for mode in exit hang; do
    echo "$mode" >"$TMP/agent.mode"
    expect_exit 0 "submit (agent: $mode)" "$EBB" --state-dir "$S" submit "$TMP/local.yaml"
    ID=$OUT
    failed_after "agent: $mode" "$ID" 8
    check "the end says why (agent: $mode)" \
        test "$(json_get "$JOB" '"8 launches in a row never started the job" in d["events"][-1]["reason"]')" = True
done
check "a hanging agent's instance is released when its token expires" \
    test "$(json_get "$JOB" '"never reported within 2 s" in d["events"][-1]["reason"]')" = True
S=$S_SAVED
stop_daemon TERM
check "ebbd stops cleanly" test "$DAEMON_EXIT" = 0
finish
