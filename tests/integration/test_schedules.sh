#!/usr/bin/env bash
# Schedules in ebbd (docs/cron.md): ebb schedule add/list/show/remove, runs
# started at fire times on an accelerated clock (speed 1200: a fire time of
# "*/30 * * * *" every 1.5 s), a still-running run making the next fire
# time skip with its reason, never two runs for one fire time (also after
# SIGKILL; a start whose clock would replay them is refused), missed fire times
# after downtime (run-once: exactly one run; skip: none), removal.
. "$(dirname "$0")/lib.sh"
here=$(cd "$(dirname "$0")" && pwd)

S="$TMP/state"
# A copy of the agent of its own, so that test_jobs.sh, which looks for
# leftover agents by path, never counts this test's ones.
cp -p "$here/fake_agent.py" "$TMP/fake_agent.py"
# config START: ebb.yaml with the clock starting at START.
config() {
    cat >"$TMP/ebb.yaml" <<YAML
providers:
  sim:
    prices: $EBB_SOURCE_ROOT/tests/data/engine/prices_flat.csv
  local:
    agent: $TMP/fake_agent.py
run_on: {sim: local}
clock: {start: $1, speed: 1200}
agent_api: {listen: 127.0.0.1:0}
YAML
}
# schedule NAME MISSED: a schedule file.
schedule() {
    cat >"$TMP/$1.yaml" <<YAML
name: $1
cron: "*/30 * * * *"
window: 6h
budget: 5 USD
missed: $2
job:
  run: [python3, train.py]
  work: 1h
  resources: {instance_types: [p3.2xlarge]}
  market: spot
YAML
}
show() { "$EBB" --state-dir "$S" schedule show "$1" --json 2>/dev/null; }
# wait_for NAME PYTHON-EXPR: polls `schedule show NAME` (as d) for up to
# 30 s until EXPR is true.
wait_for() {
    for _ in $(seq 1 150); do
        [ "$(json_get "$(show "$1" || echo '{}')" "$2" 2>/dev/null)" = True ] && return 0
        sleep 0.2
    done
    return 1
}
# sql QUERY: one value from the store.
sql() { python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute(sys.argv[2]).fetchone()[0])' "$S/ebb.db" "$1"; }
iso() { python3 -c 'import datetime,sys; print(datetime.datetime.fromtimestamp(int(sys.argv[1])/1000, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))' "$1"; }
HALF=1800000

config 2020-01-01T05:50:00Z
check "ebbd starts" start_daemon "$S" --config "$TMP/ebb.yaml"

# Bad files exit 2 with file:line, and store nothing.
printf 'name: bad\ncron: "*/30 * * *"\nwindow: 6h\njob: {run: [x], work: 1h}\n' >"$TMP/bad.yaml"
expect_exit 2 "bad cron refused" "$EBB" --state-dir "$S" schedule add "$TMP/bad.yaml"
check "bad cron names file and line" contains "$ERR" "bad.yaml:2: cron:"
printf 'name: bad\ncron: "@daily"\nwindow: 6h\njob:\n  run: [x]\n  work: 1h\n  deadline: 2h\n' >"$TMP/bad2.yaml"
expect_exit 2 "a job deadline refused" "$EBB" --state-dir "$S" schedule add "$TMP/bad2.yaml"
check "job deadline names file and line" contains "$ERR" "bad2.yaml:7: job.deadline:"
printf 'name: bad\ncron: "@daily"\nwindow: 1h\njob: {run: [x], work: 1h}\n' >"$TMP/bad3.yaml"
expect_exit 2 "a window shorter than the work refused" "$EBB" --state-dir "$S" schedule add "$TMP/bad3.yaml"
check "window names file and line" contains "$ERR" "bad3.yaml:3: window:"
expect_exit 2 "missing file refused" "$EBB" --state-dir "$S" schedule add "$TMP/nope.yaml"
expect_exit 0 "schedule list" "$EBB" --state-dir "$S" schedule list --json
check "bad files stored nothing" test "$(json_get "$OUT" 'len(d["schedules"])')" = 0
expect_exit 0 "schedule list (text, empty)" "$EBB" --state-dir "$S" schedule list
check "empty list says how to add" contains "$OUT" "ebb schedule add"

schedule catcher run-once
schedule skipper skip
expect_exit 0 "add catcher" "$EBB" --state-dir "$S" schedule add "$TMP/catcher.yaml"
CID=$OUT
check "add prints the id" test "${CID#s-}" != "$CID"
expect_exit 0 "add skipper" "$EBB" --state-dir "$S" schedule add "$TMP/skipper.yaml"
expect_exit 1 "the same name twice refused" "$EBB" --state-dir "$S" schedule add "$TMP/catcher.yaml"
check "says it exists" contains "$ERR" "exists already"

# The first fire time starts a run; the run (~8 s of wall time) is still
# going at the next ones, which are skipped with the reason.
check "a fire time starts a run" wait_for catcher 'len(d["runs"]) == 1'
check "a fire time while it runs is skipped" wait_for catcher \
    'any(e["kind"] == "skipped" for e in d["events"])'
J=$(show catcher)
R1=$(json_get "$J" 'd["runs"][0]["id"]')
F1=$(json_get "$J" 'd["runs"][0]["fire_at"]')
check "runs start at fire times" test $((F1 % HALF)) = 0
check "the run is due a window after its fire time" \
    test "$(json_get "$J" 'd["runs"][0]["deadline"] - d["runs"][0]["fire_at"]')" = 21600000
check "the skip says why" contains "$J" "the previous run of this schedule is still going (job $R1)"
check "show lists 5 next fire times" test "$(json_get "$J" 'len(d["next_fires"])')" = 5
check "show says it is running" test "$(json_get "$J" 'd["running"]')" = True
check "the run has the schedule's budget" test "$(sql "SELECT budget_micros FROM jobs WHERE id = '$R1'")" = 5000000
check "skipping is logged" grep -q "schedule catcher: fire time .* skipped: the previous run" "$S.log"
expect_exit 0 "schedule show (text)" "$EBB" --state-dir "$S" schedule show catcher
check "text shows the run" contains "$OUT" "$R1"
check "text shows the skip" contains "$OUT" "skipped"
check "text shows the spec" contains "$OUT" "  cron: \"*/30 * * * *\""
expect_exit 0 "schedule list (text)" "$EBB" --state-dir "$S" schedule list
check "list shows both" test "$(printf '%s\n' "$OUT" | grep -c '\*/30')" = 2

# Once the run has ended, the next fire time starts a new one. It is
# cancelled here unless it finished first: its 1 h of work is 3 s of wall
# time, which a slow machine (a sanitizer build) may take to get here.
"$EBB" --state-dir "$S" cancel "$R1" >/dev/null 2>"$TMP/cancel.err"
check "cancel the run (or it had finished)" \
    sh -c '[ ! -s "$1" ] || grep -q "has already ended" "$1"' _ "$TMP/cancel.err"
check "the next fire time after the run ends starts another" \
    wait_for catcher 'len(d["runs"]) == 2'

# Every fire time is dealt with once: consecutive, none twice.
consecutive='(lambda f: len(f) > 2 and f == list(range(f[0], f[0] + 1800000 * len(f), 1800000)))(sorted(e["fire_at"] for e in d["events"] if e["kind"] in ("started", "skipped")))'
check "each fire time dealt with once" test "$(json_get "$(show catcher)" "$consecutive")" = True

# SIGKILL, then a start whose clock would replay the last fire times: it
# is refused, since the clock would run backwards (#16 point 1). Started
# again as before, the clock resumes where it got to, and no fire time
# starts again. ebbd takes the running run back, so the next fire time is
# dealt with as during a run (skipped with its reason).
stop_daemon KILL
L=$(sql "SELECT last_fire_at FROM schedules WHERE name = 'catcher'")
RUNS=$(sql "SELECT count(*) FROM jobs WHERE schedule_id = '$CID'")
config "$(iso $((L - 50 * 60000)))"
expect_exit 1 "a clock that would replay the last fire times is refused" \
    "$EBBD" --state-dir "$S" --config "$TMP/ebb.yaml"
check "the refusal names the clock's start" contains "$ERR" "clock.start is $(iso $((L - 50 * 60000))), before "
check "and says what to do" contains "$ERR" "Set clock.start to that time or later"
config 2020-01-01T05:50:00Z
check "ebbd starts again" start_daemon "$S" --config "$TMP/ebb.yaml"
check "its clock resumes where it got to" grep -q "the clock resumes at" "$S.log"
check "the next fire time after the restart is dealt with once" \
    wait_for catcher "sum(1 for e in d['events'] if e['fire_at'] == $L + 1800000 and e['kind'] in ('started', 'skipped')) == 1"
check "the run taken back still blocks its schedule" \
    wait_for catcher "len(d['runs']) == $RUNS"
check "no fire time ran twice" test "$(sql "SELECT count(*) - count(DISTINCT schedule_fire_at) FROM jobs WHERE schedule_id = '$CID'")" = 0
check "each fire time dealt with once after the restart" test "$(json_get "$(show catcher)" "$consecutive")" = True

# Down for 95 minutes: three fire times pass. run-once starts exactly one
# run, for the latest; skip starts none. The runs taken back are cancelled
# first: a run still going would (rightly) hold its schedule.
ENDED="('succeeded', 'failed', 'cancelled', 'budget_exhausted', 'deadline_missed')"
for name in catcher skipper; do
    LAST=$(json_get "$(show $name)" "d['runs'][0]['id'] if d['runs'] and d['runs'][0]['state'] not in $ENDED else ''")
    [ -n "$LAST" ] && "$EBB" --state-dir "$S" cancel "$LAST" >/dev/null
    check "$name's run taken back has ended" wait_for $name \
        "not d['runs'] or d['runs'][0]['state'] in $ENDED"
done
stop_daemon KILL
L=$(sql "SELECT last_fire_at FROM schedules WHERE name = 'catcher'")
SL=$(sql "SELECT last_fire_at FROM schedules WHERE name = 'skipper'")
# A fire time may have come between the cancel and the kill: its run is
# then still going when ebbd comes back, and holds its schedule.
going() {
    sql "SELECT count(*) FROM jobs j JOIN schedules s ON j.schedule_id = s.id WHERE s.name = '$1' AND j.state NOT IN ('succeeded', 'failed', 'cancelled', 'budget_exhausted', 'deadline_missed')"
}
CATCHER_GOING=$(going catcher)
SKIPPER_GOING=$(going skipper)
check "both schedules dealt with the same fire times" test "$L" = "$SL"
config "$(iso $((L + 95 * 60000)))"
check "ebbd starts after the downtime" start_daemon "$S" --config "$TMP/ebb.yaml"
check "run-once says which fire times were missed" \
    wait_for catcher "any(e['kind'] == 'missed' and e['fire_at'] == $L + 1800000 for e in d['events'])"
check "skip says which fire times were missed" \
    wait_for skipper "any(e['kind'] == 'missed' and e['fire_at'] == $L + 1800000 for e in d['events'])"
# When ebbd caught up (its start took some clock time), and the latest
# fire time then due: at least the third after L.
AT=$(sql "SELECT e.at FROM schedule_events e JOIN schedules s ON e.schedule_id = s.id WHERE s.name = 'skipper' AND e.kind = 'missed'")
LATEST=$((AT / HALF * HALF))
check "three fire times passed while ebbd was down" test "$LATEST" -ge $((L + 3 * HALF))
if [ "$CATCHER_GOING" = 0 ]; then
    check "run-once starts one run, for the latest missed fire time" \
        wait_for catcher "any(r['fire_at'] == $LATEST for r in d['runs'])"
    WANT=1
else
    check "run-once holds its run for a run still going" \
        wait_for catcher "any(e['kind'] == 'skipped' and e['fire_at'] == $LATEST for e in d['events'])"
    WANT=0
fi
check "run-once started $WANT run for the downtime" test \
    "$(sql "SELECT count(*) FROM jobs WHERE schedule_id = '$CID' AND schedule_fire_at > $L AND schedule_fire_at <= $LATEST")" = $WANT
check "skip started none for the downtime" test \
    "$(sql "SELECT count(*) FROM jobs j JOIN schedules s ON j.schedule_id = s.id WHERE s.name = 'skipper' AND schedule_fire_at > $L AND schedule_fire_at <= $AT - 60000")" = 0
if [ "$SKIPPER_GOING" = 0 ]; then
    check "skip runs again at the next fire time" wait_for skipper \
        "any(r['fire_at'] == $LATEST + 1800000 for r in d['runs'])"
else
    check "skip deals with the next fire time" wait_for skipper \
        "any(e['fire_at'] == $LATEST + 1800000 for e in d['events'])"
fi
check "missed fire times are logged" grep -q "schedule skipper: fire times .* passed while ebbd was not running (missed: skip)" "$S.log"

# remove stops future runs; the run already started goes on.
LAST=$(json_get "$(show skipper)" 'd["runs"][0]["id"]')
expect_exit 0 "remove" "$EBB" --state-dir "$S" schedule remove skipper
check "remove says so" contains "$OUT" "removed"
expect_exit 1 "show after remove" "$EBB" --state-dir "$S" schedule show skipper
check "says there is no such schedule" contains "$ERR" "no schedule skipper"
expect_exit 1 "remove twice" "$EBB" --state-dir "$S" schedule remove skipper
N=$(sql "SELECT count(*) FROM jobs WHERE name = 'skipper'")
check "two more fire times pass" wait_for catcher "d['last_fire_at'] >= $LATEST + 3 * 1800000"
check "no run after remove" test "$(sql "SELECT count(*) FROM jobs WHERE name = 'skipper'")" = "$N"
check "the started run was not cancelled" test "$(sql "SELECT state FROM jobs WHERE id = '$LAST'")" != cancelled
expect_exit 0 "list after remove" "$EBB" --state-dir "$S" schedule list --json
check "list has one left" test "$(json_get "$OUT" '[s["name"] for s in d["schedules"]]')" = "['catcher']"
expect_exit 2 "unknown subcommand" "$EBB" --state-dir "$S" schedule frobnicate

stop_daemon TERM
check "ebbd stops cleanly" test "$DAEMON_EXIT" = 0
# Runs still going when ebbd stopped: their agents give up once ebbd is
# gone. Wait for them so that nothing outlives the test.
for _ in $(seq 1 100); do
    pgrep -f "$TMP/fake_agent.py" >/dev/null || break
    sleep 0.1
done
finish
