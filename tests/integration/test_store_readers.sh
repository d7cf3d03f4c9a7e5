#!/usr/bin/env bash
# Readers of ebb.db never cost ebbd a commit (#16 point 2). ebbd opens an
# extra connection for each `ebb prices` (a read off its loop); a plain
# open()/close() of ebb.db there dropped every POSIX lock ebbd held on the
# file, so an outside sqlite3 reader took itself for the last connection
# and deleted ebbd's WAL: after a SIGKILL the submits ebbd had answered
# were gone. On the built-in configuration: ebb prices, an outside sqlite3
# reader, three submits each answered with an id, SIGKILL, a restart, and
# every answered job is in the store; then a burst of reads and submits,
# and ebbd never logs a WAL checkpoint failure.
. "$(dirname "$0")/lib.sh"

S="$TMP/state"
DB="$S/ebb.db"
# The jobs only need to exist: a run that waits, cancelled at the end.
cat >"$TMP/job.yaml" <<'YAML'
name: reader-test
run: [sleep, "300"]
work: 1h
resources: {instance_types: [p2.xlarge]}
market: spot
YAML
# jobs: how many jobs an outside reader counts.
jobs() { sqlite3 "$DB" "SELECT count(*) FROM jobs"; }
# submit_n N: submits N jobs; each must be answered with an id.
submit_n() {
    local n=0
    for _ in $(seq 1 "$1"); do
        id=$("$EBB" --state-dir "$S" submit "$TMP/job.yaml" 2>>"$TMP/submit.err") || return 1
        case "$id" in j-*) n=$((n + 1)) ;; *) return 1 ;; esac
        IDS="$IDS $id"
    done
    [ "$n" -eq "$1" ]
}
IDS=""

check "ebbd starts on the built-in configuration" start_daemon "$S"
expect_exit 0 "ebb prices (a read on a connection of its own)" "$EBB" --state-dir "$S" prices
check "an outside sqlite3 reader sees no jobs yet" test "$(jobs)" = 0
check "three submits, each answered with an id" submit_n 3
stop_daemon KILL
check "after SIGKILL an outside reader sees the three jobs" test "$(jobs)" = 3
check "ebbd starts again" start_daemon "$S"
expect_exit 0 "ebb jobs" "$EBB" --state-dir "$S" jobs --json
for id in $IDS; do
    check "job $id is back" contains "$OUT" "\"$id\""
done

# Under load: reads on ebbd's extra connections (prices, its WAL
# checkpoints) and outside readers while submits grow the WAL. None of it
# may cost a commit or make a checkpoint fail.
for round in $(seq 1 20); do
    "$EBB" --state-dir "$S" prices >/dev/null 2>&1
    jobs >/dev/null
    submit_n 10 || break
done
check "200 more submits answered" test "$(echo $IDS | wc -w)" = 203
stop_daemon KILL
check "after the load and SIGKILL every answered job is stored" test "$(jobs)" = 203
check "no WAL checkpoint failed" test "$(grep -c 'WAL checkpoint' "$S.log")" = 0
check "no disk I/O error" test "$(grep -c 'disk I/O error' "$S.log")" = 0
check "integrity_check" test "$(sqlite3 "$DB" "PRAGMA integrity_check")" = ok

# Leave nothing running: every job is cancelled (its instance released)
# and ebbd stops cleanly.
check "ebbd starts to clean up" start_daemon "$S"
for id in $IDS; do
    "$EBB" --state-dir "$S" cancel "$id" >/dev/null 2>&1
done
stop_daemon TERM
check "ebbd stops cleanly" test "$DAEMON_EXIT" = 0
finish
