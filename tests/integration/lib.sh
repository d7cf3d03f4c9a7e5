# Shared helpers for the integration tests (sourced, not run).
# The binaries come from meson through $EBBD, $EBB and $EBB_AGENT.
set -u

fails=0
checks=0
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ebb-it.XXXXXX")
DAEMON_PIDS=""

# The processes whose command line names a path in $TMP: the agents of
# local instances that outlive ebbd (as they do by design) and the fakes.
kill_leftovers() {
    local p
    for p in /proc/[0-9]*; do
        [ "${p#/proc/}" = "$$" ] && continue
        grep -qaF -- "$TMP/" "$p/cmdline" 2>/dev/null && kill -KILL "${p#/proc/}" 2>/dev/null
    done
}

cleanup() {
    for pid in $DAEMON_PIDS; do
        kill -KILL "$pid" 2>/dev/null
    done
    kill_leftovers
    rm -rf "$TMP"
}
trap cleanup EXIT

ok() { checks=$((checks + 1)); printf 'ok %d - %s\n' "$checks" "$1"; }
not_ok() {
    checks=$((checks + 1)); fails=$((fails + 1))
    printf 'not ok %d - %s\n' "$checks" "$1"
    [ $# -gt 1 ] && printf '#   %s\n' "$2"
    return 0
}

# check NAME COMMAND...: passes when the command exits 0.
check() {
    local name=$1; shift
    if "$@"; then ok "$name"; else not_ok "$name" "failed: $*"; fi
}

# expect_exit CODE NAME COMMAND...: runs the command with output captured
# in $OUT / $ERR and checks its exit code.
expect_exit() {
    local want=$1 name=$2; shift 2
    "$@" >"$TMP/out" 2>"$TMP/err"
    local got=$?
    OUT=$(cat "$TMP/out"); ERR=$(cat "$TMP/err")
    if [ "$got" -eq "$want" ]; then ok "$name"
    else not_ok "$name" "exit $got, wanted $want; stderr: $ERR"; fi
}

contains() { case "$1" in *"$2"*) return 0 ;; *) return 1 ;; esac; }

# json_get JSON PYTHON-EXPR: evaluates EXPR with d = the parsed JSON.
json_get() { python3 -c "import json,sys; d=json.loads(sys.argv[1]); print($2)" "$1"; }

# start_daemon DIR [ARGS...]: starts ebbd in the background, logs to
# DIR.log, waits until it answers (a stale socket file may exist before it
# does). Sets DAEMON_PID.
start_daemon() {
    local dir=$1; shift
    "$EBBD" --state-dir "$dir" "$@" 2>"$dir.log" &
    DAEMON_PID=$!
    DAEMON_PIDS="$DAEMON_PIDS $DAEMON_PID"
    for _ in $(seq 1 100); do
        "$EBB" --state-dir "$dir" status >/dev/null 2>&1 && return 0
        kill -0 "$DAEMON_PID" 2>/dev/null || return 1
        sleep 0.05
    done
    return 1
}

# stop_daemon SIGNAL: signals $DAEMON_PID and sets DAEMON_EXIT.
stop_daemon() {
    kill -"$1" "$DAEMON_PID"
    wait "$DAEMON_PID"
    DAEMON_EXIT=$?
}

finish() {
    printf '1..%d\n' "$checks"
    [ "$fails" -eq 0 ]
    exit $?
}
