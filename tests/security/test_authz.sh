#!/usr/bin/env bash
# What others may see, and teams for schedules (docs/security.md, "What
# others may see" and "Teams and schedules"): on one socket widened to
# 0666, bob gets only the summary of alice's job and schedule and never
# the value of her HF_TOKEN (in no output of any command he can run),
# while alice, her team's admin and root see them in full; a schedule for
# a team its owner is not in is refused when it is added, and at its next
# fire once the owner has left the team; a member of several teams who
# names none is refused with a message naming them.
#
# The market is sim alone (no run_on): instances are simulated, so no job
# process runs and the test is about the API alone.
. "$(dirname "$0")/lib.sh"

S="$W/state"
SECRET="hf_s3cret-b0b-must-not-see"
ALICE=ebbsec-alice BOB=ebbsec-bob TADMIN=ebbsec-svc

# config START SPEED ALICE_TEAMS: ebb.yaml; alice is a member of the teams
# named in ALICE_TEAMS (ml, vision or both), bob of vision, and ebbsec-svc
# is ml's team admin.
config() {
    local ml=() vision=("$BOB")
    case " $3 " in *" ml "*) ml+=("$ALICE") ;; esac
    case " $3 " in *" vision "*) vision+=("$ALICE") ;; esac
    local IFS=,
    cat >"$W/ebb.yaml" <<YAML
api: {socket_mode: "0666"}
providers:
  sim:
    prices: $EBB_SOURCE_ROOT/tests/data/engine/prices_flat.csv
teams:
  ml: {members: [${ml[*]}], admins: [$TADMIN]}
  vision: {members: [${vision[*]}]}
clock: {start: $1, speed: $2}
YAML
    chmod 644 "$W/ebb.yaml"
}
# job FILE [TEAM]: a job spec carrying the secret in its env.
job() {
    {
        printf 'name: secret-job\nrun: [python3, train.py, --token-file, /home/alice/.tok]\n'
        printf 'work: 24h\nresources: {instance_types: [p3.2xlarge]}\nmarket: spot\n'
        printf 'checkpoint: {dir: /home/alice/ckpt}\nenv:\n  HF_TOKEN: %s\n' "$SECRET"
        [ -n "${2:-}" ] && printf 'team: %s\n' "$2"
    } >"$W/$1"
    chmod 644 "$W/$1"
}
# schedule FILE NAME [TEAM]: a schedule whose job carries the secret.
schedule() {
    {
        printf 'name: %s\ncron: "*/30 * * * *"\nwindow: 6h\njob:\n' "$2"
        printf '  run: [python3, eval.py]\n  work: 1h\n'
        printf '  resources: {instance_types: [p3.2xlarge]}\n  market: spot\n'
        printf '  env:\n    HF_TOKEN: %s\n' "$SECRET"
        [ -n "${3:-}" ] && printf '  team: %s\n' "$3"
    } >"$W/$1"
    chmod 644 "$W/$1"
}
e() { "$EBB" --state-dir "$S" "$@"; }

# Real time: no fire time (06:00) comes while the first ebbd runs.
config 2020-01-01T05:50:00Z 1 "ml vision"
check "ebbd starts" start_daemon "$S" --config "$W/ebb.yaml"
job ml.yaml ml
job none.yaml
job vision.yaml vision
schedule nightly.yaml nightly ml
schedule bobs.yaml bobs ml
schedule loose.yaml loose

# ---- a member of several teams must name one -----------------------------
expect_exit 2 "alice (in ml and vision) naming no team is refused" \
    as $ALICE "$EBB" --state-dir "$S" submit "$W/none.yaml"
check "the refusal names her teams" contains "$ERR" \
    "ebbsec-alice is a member of several teams (ml, vision); name one with team:"
expect_exit 2 "her schedule naming no team is refused" \
    as $ALICE "$EBB" --state-dir "$S" schedule add "$W/loose.yaml"
check "that refusal names her teams too" contains "$ERR" \
    "ebbsec-alice is a member of several teams (ml, vision)"
expect_exit 0 "bob (in vision alone) names no team" \
    as $BOB "$EBB" --state-dir "$S" submit "$W/none.yaml"
BOBS_JOB=$OUT
expect_exit 0 "bob's job show" as $BOB "$EBB" --state-dir "$S" job show "$BOBS_JOB" --json
check "bob's job counts against his one team" test "$(json_get "$OUT" 'd["team"]')" = vision

# ---- a schedule for a foreign team is refused when added ------------------
expect_exit 1 "bob's schedule for team ml is refused" \
    as $BOB "$EBB" --state-dir "$S" schedule add "$W/bobs.yaml"
check "the refusal says why" contains "$ERR" "ebbsec-bob is not a member of team ml"
check "the refusal is logged" grep -q "refused schedule bobs to uid $BOB_UID" "$S.log"
expect_exit 1 "bob's job for team ml is refused (submit, the same rule)" \
    as $BOB "$EBB" --state-dir "$S" submit "$W/ml.yaml"
check "the submit refusal says why" contains "$ERR" "ebbsec-bob is not a member of team ml"

# ---- alice's job and schedule --------------------------------------------
expect_exit 0 "alice submits for ml" as $ALICE "$EBB" --state-dir "$S" submit "$W/ml.yaml"
JOB=$OUT
expect_exit 0 "alice adds a schedule for ml" as $ALICE "$EBB" --state-dir "$S" schedule add "$W/nightly.yaml"
SCHED=$OUT
expect_exit 0 "schedule list" e schedule list --json
check "bob's refused schedule stored nothing" \
    test "$(json_get "$OUT" '[s["name"] for s in d["schedules"]]')" = "['nightly']"

# ---- bob sees summaries, never the secret --------------------------------
: >"$W/bob.out"
# bob_run NAME WANT COMMAND...: runs an ebb command as bob, keeps all it
# printed for the secret check.
bob_run() {
    local name=$1 want=$2; shift 2
    expect_exit "$want" "bob: $name" as $BOB "$EBB" --state-dir "$S" "$@"
    printf '%s\n%s\n' "$OUT" "$ERR" >>"$W/bob.out"
}
bob_run "job show" 0 job show "$JOB"
check "job show says it is redacted" contains "$OUT" "redacted: not your job"
check "job show still gives the state" contains "$OUT" "state:"
bob_run "job show --json" 0 job show "$JOB" --json
check "the answer says redacted" test "$(json_get "$OUT" 'd["redacted"]')" = True
check "it keeps the summary" \
    test "$(json_get "$OUT" '(d["id"], d["team"], d["owner_uid"], "spent_micros" in d)')" = "('$JOB', 'ml', $ALICE_UID, True)"
check "no spec, events, instances, checkpoints or where it runs" \
    test "$(json_get "$OUT" 'sorted(set(d) & {"spec", "spec_yaml", "events", "instances", "checkpoints", "current", "spent_by_kind"})')" = "[]"
bob_run "jobs --all --json" 0 jobs --all --json
check "the list has alice's job" contains "$OUT" "$JOB"
bob_run "jobs --all" 0 jobs --all
bob_run "schedule show" 0 schedule show nightly
check "schedule show says it is redacted" contains "$OUT" "redacted: not your schedule"
check "schedule show names the team" contains "$OUT" "team:        ml"
bob_run "schedule show --json" 0 schedule show "$SCHED" --json
check "no yaml, file, workdir, runs or events" \
    test "$(json_get "$OUT" '(d["redacted"], sorted(set(d) & {"yaml", "file", "workdir", "runs", "events"}))')" = "(True, [])"
bob_run "schedule list --json" 0 schedule list --json
check "the list row is redacted" test "$(json_get "$OUT" 'd["schedules"][0]["redacted"]')" = True
bob_run "schedule list" 0 schedule list
bob_run "logs" 1 logs "$JOB"
bob_run "cancel" 1 cancel "$JOB"
bob_run "report --json" 0 report --by job --json
bob_run "report" 0 report --by job
bob_run "budget --json" 0 budget --json
bob_run "status" 0 status
check "bob got output at all" test -s "$W/bob.out"
if grep -q "$SECRET" "$W/bob.out"; then
    not_ok "HF_TOKEN's value appears in nothing bob got" "$(grep -n "$SECRET" "$W/bob.out" | head -3)"
else
    ok "HF_TOKEN's value appears in nothing bob got"
fi
check "nor alice's paths" test "$(grep -c '/home/alice' "$W/bob.out")" = 0

# ---- alice, ml's team admin and root see everything ----------------------
for who in "$ALICE" "$TADMIN" root; do
    expect_exit 0 "$who: job show --json" as $who "$EBB" --state-dir "$S" job show "$JOB" --json
    check "$who sees the job in full" test "$(json_get "$OUT" '("redacted" in d, d["spec"]["env"]["HF_TOKEN"])')" = "(False, '$SECRET')"
    expect_exit 0 "$who: job show" as $who "$EBB" --state-dir "$S" job show "$JOB"
    check "$who gets the events" contains "$OUT" "Events:"
    expect_exit 0 "$who: schedule show --json" as $who "$EBB" --state-dir "$S" schedule show nightly --json
    check "$who sees the schedule's YAML" contains "$(json_get "$OUT" 'd["yaml"]')" "$SECRET"
done
expect_exit 0 "the team admin's list row is full" as $TADMIN "$EBB" --state-dir "$S" schedule list --json
check "with its file" test "$(json_get "$OUT" '"file" in d["schedules"][0]')" = True
expect_exit 0 "bob's own job, to bob, is full" as $BOB "$EBB" --state-dir "$S" job show "$BOBS_JOB" --json
check "not redacted" test "$(json_get "$OUT" '"redacted" in d')" = False

# ---- alice leaves ml: the next fire of her schedule is refused -----------
stop_daemon TERM
check "ebbd stops" test "$DAEMON_EXIT" = 0
config 2020-01-01T05:59:00Z 1200 "vision"
check "ebbd starts without alice in ml" start_daemon "$S" --config "$W/ebb.yaml"
failed_fires='[e["fire_at"] for e in d["events"] if e["kind"] == "failed" and "ebbsec-alice is not a member of team ml" in e["reason"]]'
# wait_failed N: until `schedule show` has N refused fires (30 s at most).
wait_failed() {
    for _ in $(seq 1 150); do
        [ "$(json_get "$(e schedule show nightly --json 2>/dev/null || echo '{"events": []}')" "len($failed_fires) >= $1")" = True ] && return 0
        sleep 0.2
    done
    return 1
}
check "the first fire is refused and recorded" wait_failed 1
check "the refusal is logged" grep -q "schedule nightly: fire time .* the run could not start: ebbsec-alice is not a member of team ml" "$S.log"
check "the next fire is refused too" wait_failed 2
J=$(e schedule show nightly --json)
check "no run started" test "$(json_get "$J" 'len(d["runs"])')" = 0
check "one refusal per fire time, not a retry loop" \
    test "$(json_get "$J" "(lambda f: len(f) == len(set(f)) and all(x % 1800000 == 0 for x in f))($failed_fires)")" = True
expect_exit 0 "schedule show (text) as alice" as $ALICE "$EBB" --state-dir "$S" schedule show nightly
check "the text shows the failed fire" contains "$OUT" "ebbsec-alice is not a member of team ml"

stop_daemon TERM
check "ebbd stops cleanly" test "$DAEMON_EXIT" = 0
finish
