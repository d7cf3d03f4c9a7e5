#!/usr/bin/env bash
# ebbd and the ebb CLI as real processes: start-up, the API socket, the
# state lock, bad configuration, and clean shutdown.
. "$(dirname "$0")/lib.sh"

for prog in "$EBBD" "$EBB" "$EBB_AGENT"; do
    expect_exit 0 "$(basename "$prog") --version" "$prog" --version
    check "$(basename "$prog") --version prints the version" contains "$OUT" "0.1.0"
    expect_exit 0 "$(basename "$prog") --help" "$prog" --help
done
for cmd in status providers policies prices; do
    expect_exit 0 "ebb $cmd --help" "$EBB" "$cmd" --help
    check "ebb $cmd --help shows usage" contains "$OUT" "Usage: ebb $cmd"
done
expect_exit 2 "unknown command" "$EBB" frobnicate
check "unknown command is named" contains "$ERR" 'unknown command "frobnicate"'

# Without a daemon: one line saying so and how to start it, exit 1.
S="$TMP/state"
expect_exit 1 "status without ebbd" "$EBB" --state-dir "$S" status
check "says ebbd is not running" contains "$ERR" "ebbd is not running"
check "says how to start it" contains "$ERR" "ebbd --state-dir $S"
check "one line only" test "$(printf '%s\n' "$ERR" | wc -l)" -eq 1

# An answer over the 16 MiB a message may hold (here from a stand-in for
# ebbd) is reported as such, not as ebbd not running (#16 point 11).
mkdir -p "$TMP/huge"
python3 - "$TMP/huge/ebb.sock" <<'EOF' &
import socket, sys
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind(sys.argv[1])
srv.listen(1)
conn, _ = srv.accept()
conn.recv(65536)
conn.sendall(b'{"id":1,"result":"' + b"x" * (17 << 20) + b'"}\n')
conn.close()
EOF
HUGE_PID=$!
for _ in $(seq 1 100); do [ -S "$TMP/huge/ebb.sock" ] && break; sleep 0.05; done
expect_exit 1 "an answer over 16 MiB fails" "$EBB" --state-dir "$TMP/huge" status
check "... saying answer too large" contains "$ERR" "answer too large"
check "... not that ebbd is not running" test -z "$(printf '%s' "$ERR" | grep 'not running')"
kill "$HUGE_PID" 2>/dev/null; wait "$HUGE_PID" 2>/dev/null

# Bad configuration: exit 2 with file:line, nothing written.
printf 'log_level: info\nbudget_cap: 3\n' >"$TMP/bad.yaml"
expect_exit 2 "bad config refused" "$EBBD" --state-dir "$TMP/never" --config "$TMP/bad.yaml"
check "bad config names file and line" contains "$ERR" "bad.yaml:2:"
check "bad config created no state" test ! -e "$TMP/never"
printf 'providers:\n  fake:\n    limit: forty\n' >"$TMP/bad2.yaml"
expect_exit 2 "bad amount refused" "$EBBD" --state-dir "$TMP/never" --config "$TMP/bad2.yaml"
check "bad amount explained" contains "$ERR" 'bad2.yaml:3: providers.fake.limit: "forty" is not an amount'
check "bad amount created no state" test ! -e "$TMP/never"
# Self-defeating agent timing is refused with the allowed range (#16 point 8).
printf 'agent_api:\n  heartbeat: 0s\n' >"$TMP/hb0.yaml"
expect_exit 2 "agent_api.heartbeat: 0s refused" "$EBBD" --state-dir "$TMP/never" --config "$TMP/hb0.yaml"
check "... with the allowed range" contains "$ERR" \
    "hb0.yaml:2: agent_api.heartbeat: 0s is outside the allowed range (from 1s to 10m)"
printf 'agent_api:\n  heartbeat: 10m\n  heartbeat_timeout: 1s\n' >"$TMP/hbto.yaml"
expect_exit 2 "a heartbeat_timeout below 3 heartbeats refused" \
    "$EBBD" --state-dir "$TMP/never" --config "$TMP/hbto.yaml"
check "... with the allowed range" contains "$ERR" \
    "hbto.yaml:3: agent_api.heartbeat_timeout: 1s is outside the allowed range (from 3s to 1d)"
check "bad agent timing created no state" test ! -e "$TMP/never"

# A state directory others may write into, or a lock file planted as a
# link, is refused before anything is written through it.
mkdir -p "$TMP/open" "$TMP/linked"
chmod 777 "$TMP/open"
expect_exit 1 "a state dir writable by others is refused" "$EBBD" --state-dir "$TMP/open"
check "it says how to fix the mode" contains "$ERR" "writable by others (mode 777); chmod go-w"
check "nothing was written into it" test -z "$(ls -A "$TMP/open")"
echo keep >"$TMP/victim"
ln -s "$TMP/victim" "$TMP/linked/ebbd.lock"
chmod 700 "$TMP/linked"
expect_exit 1 "a lock file that is a link is refused" "$EBBD" --state-dir "$TMP/linked"
check "it says the lock must be a regular file" contains "$ERR" "must be a regular file, not a link"
check "the link's target is untouched" test "$(cat "$TMP/victim")" = keep

# Start on the built-in default configuration.
check "ebbd starts" start_daemon "$S"

# Clients that hang up before their answer is written cost that answer,
# never the daemon (no SIGPIPE).
python3 - "$S/ebb.sock" <<'PY'
import socket, sys
for _ in range(200):
    c = socket.socket(socket.AF_UNIX)
    c.connect(sys.argv[1])
    c.sendall(b'{"id":1,"method":"prices","params":{}}\n{"id":2,"method":"status"}\n')
    c.close()
PY
check "ebbd survives clients that hang up" kill -0 "$DAEMON_PID"
FIRST_PID=$DAEMON_PID
expect_exit 0 "ebb status" "$EBB" --state-dir "$S" status
check "status shows the state dir" contains "$OUT" "$S"
check "status lists policies" contains "$OUT" "uniform-progress"
expect_exit 0 "ebb status --json" "$EBB" --state-dir "$S" status --json
check "json: version" test "$(json_get "$OUT" 'd["version"]')" = "0.1.0"
check "json: state_dir" test "$(json_get "$OUT" 'd["state_dir"]')" = "$S"
check "json: pid" test "$(json_get "$OUT" 'd["pid"]')" = "$FIRST_PID"
check "json: no jobs yet" test "$(json_get "$OUT" 'len(d["jobs"])')" = "0"
expect_exit 0 "EBB_STATE_DIR finds the daemon" env EBB_STATE_DIR="$S" "$EBB" status --json
check "socket is owner-only" test "$(stat -c %a "$S/ebb.sock")" = "600"
check "state dir is owner-only" test "$(stat -c %a "$S")" = "700"
check "database exists" test -s "$S/ebb.db"
# The built-in configuration replays the shipped AWS trace on the sim
# market from 2020-01-06, run on local processes.
expect_exit 0 "ebb prices" "$EBB" --state-dir "$S" prices
check "built-in sim market has prices" contains "$OUT" "p3.2xlarge"
expect_exit 0 "ebb prices --json" "$EBB" --state-dir "$S" prices --json --provider aws
check "json prices are the trace's" test "$(json_get "$OUT" 'len(d["prices"]) > 10')" = "True"
check "prices observed before the clock's start" test \
    "$(json_get "$OUT" 'max(p["observed_at"] for p in d["prices"]) <= "2020-01-06T00:00:01Z"')" = "True"

# A second ebbd on the same directory exits and changes nothing.
before=$(stat -c '%i %Y %s' "$S/ebb.sock" "$S/ebb.db" "$S/ebbd.lock"; cat "$S/ebbd.lock")
expect_exit 1 "second ebbd refused" "$EBBD" --state-dir "$S"
check "second ebbd says why" contains "$ERR" "another ebbd (pid $FIRST_PID) is already running"
after=$(stat -c '%i %Y %s' "$S/ebb.sock" "$S/ebb.db" "$S/ebbd.lock"; cat "$S/ebbd.lock")
check "second ebbd changed nothing" test "$before" = "$after"
expect_exit 0 "first ebbd still answers" "$EBB" --state-dir "$S" status --json

# SIGTERM: clean exit 0, socket removed.
stop_daemon TERM
check "SIGTERM exits 0" test "$DAEMON_EXIT" -eq 0
check "loop closed cleanly" grep -q "stopped cleanly" "$S.log"
check "socket removed" test ! -e "$S/ebb.sock"

# SIGKILL leaves a stale socket: the CLI says ebbd is not running, and a
# new ebbd takes over the directory.
check "ebbd restarts" start_daemon "$S"
kill -KILL "$DAEMON_PID"; wait "$DAEMON_PID" 2>/dev/null
check "stale socket left behind" test -S "$S/ebb.sock"
expect_exit 1 "status with a stale socket" "$EBB" --state-dir "$S" status
check "stale socket: not running" contains "$ERR" "ebbd is not running"
check "ebbd starts over a stale socket" start_daemon "$S" --log-level debug
stop_daemon INT
check "SIGINT exits 0" test "$DAEMON_EXIT" -eq 0

# Providers from a configuration, and describe without a daemon.
cat >"$TMP/ebb.yaml" <<'YAML'
log_level: debug
providers:
  fake:
    greeting: bonjour
YAML
S2="$TMP/state2"
check "ebbd starts with a provider" start_daemon "$S2" --config "$TMP/ebb.yaml"
check "provider created with its configuration" grep -q "bonjour from the fake provider" "$S2.log"
expect_exit 0 "ebb providers" "$EBB" --state-dir "$S2" providers
check "providers table has a header" contains "$OUT" "NAME"
check "providers lists fake" contains "$OUT" "fake provider"
expect_exit 0 "ebb providers --json" "$EBB" --state-dir "$S2" providers --json
check "json providers" test "$(json_get "$OUT" 'd["providers"][0]["name"]')" = "fake"
check "the host polls it at its interval" \
    test "$(json_get "$OUT" 'd["providers"][0]["poll_interval_ms"]')" = 300000
check "and says when next" test "$(json_get "$OUT" 'd["providers"][0]["next_poll"] is not None')" = True
stop_daemon TERM
check "SIGTERM with a provider exits 0" test "$DAEMON_EXIT" -eq 0

# A provider whose credentials are refused: the host stops polling it
# with one error, and ebb providers says so.
printf 'providers:\n  fake:\n    refuse: true\n    interval: 1s\n' >"$TMP/refused.yaml"
S3="$TMP/state3"
check "ebbd starts with a refused provider" start_daemon "$S3" --config "$TMP/refused.yaml"
# The first poll completes on the loop's first turns.
stopped=no
for _ in $(seq 50); do
    if "$EBB" --state-dir "$S3" providers >"$TMP/providers.out" 2>&1 &&
        grep -q "stopped: authentication failed" "$TMP/providers.out"; then
        stopped=yes
        break
    fi
    sleep 0.2
done
check "ebb providers shows polling stopped" test "$stopped" = yes
sleep 2
expect_exit 0 "providers --json" "$EBB" --state-dir "$S3" providers --json
check "polled once, not again" test "$(json_get "$OUT" 'd["providers"][0]["polls"]')" = 1
check "one error in the log" test "$(grep -c "price polling stopped" "$S3.log")" = 1
stop_daemon TERM

expect_exit 0 "describe without a daemon" "$EBB" --state-dir "$TMP/none" providers describe fake
check "describe lists keys" contains "$OUT" "greeting"
check "describe shows defaults" contains "$OUT" "2.5 USD"
expect_exit 0 "describe --json" "$EBB" providers describe fake --json
check "describe json types" test "$(json_get "$OUT" '[k["type"] for k in d["config"] if k["key"]=="interval"][0]')" = "duration"
expect_exit 2 "describe unknown" "$EBB" providers describe nope
check "describe unknown explained" contains "$ERR" 'no provider plugin named "nope"'
expect_exit 0 "policies describe" "$EBB" policies describe uniform-progress

# The sim market in ebbd: a bad setting is refused before any state is
# written; a good one stores the trace's prices, which ebb prices shows.
TRACE="$EBB_SOURCE_ROOT/data/traces/aws_spot_gpu_p2p3_6regions_2019-12-20_2020-02-29.csv"
printf 'providers:\n  sim:\n    prices: %s\n    billing: hourly\n' "$TRACE" >"$TMP/badsim.yaml"
expect_exit 2 "bad sim setting refused" "$EBBD" --state-dir "$TMP/never" --config "$TMP/badsim.yaml"
check "bad sim setting explained" contains "$ERR" 'billing: "hourly" is not a billing rule'
check "bad sim setting created no state" test ! -e "$TMP/never"
printf 'providers:\n  sim:\n    prices: %s\n' "$TRACE" >"$TMP/sim.yaml"
S3="$TMP/state3"
check "ebbd starts with the sim market" start_daemon "$S3" --config "$TMP/sim.yaml"
expect_exit 0 "ebb prices --json with sim" "$EBB" --state-dir "$S3" prices --json
check "one latest price per series (98 in the AWS trace)" test "$(json_get "$OUT" 'len(d["prices"])')" = "98"
check "prices keep the trace's provider" test "$(json_get "$OUT" 'sorted(set(p["provider"] for p in d["prices"]))')" = "['aws']"
expect_exit 0 "ebb prices filtered" "$EBB" --state-dir "$S3" prices --type p3.2xlarge --zone us-east-1b
check "filtered table shows the series" contains "$OUT" "p3.2xlarge"
check "filter keeps one row" test "$(printf '%s\n' "$OUT" | wc -l)" -eq 2
stop_daemon TERM
check "SIGTERM with the sim market exits 0" test "$DAEMON_EXIT" -eq 0

finish
