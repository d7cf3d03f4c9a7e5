#!/usr/bin/env bash
# Bounded amounts (docs/security.md, "Hostile input"): money over a billion
# units of its currency, numbers in ebb.yaml beyond a billion either way,
# and integer API params beyond their bounds (times outside the years 0000
# to 9999, durations over 100 years, log offsets over 1 TiB) are refused
# where they come in, with a message that says so, and nothing is stored.
. "$(dirname "$0")/lib.sh"

S="$W/state"
config() {
    cat >"$W/ebb.yaml" <<YAML
providers:
  sim:
    prices: $EBB_SOURCE_ROOT/tests/data/engine/prices_flat.csv
    seed: $2
teams:
  ml: {members: [root], budget: $1}
clock: {start: 2020-01-01T06:00:00Z, speed: 1}
YAML
}
e() { "$EBB" --state-dir "$S" "$@"; }
# api JSON: one raw request on the socket; prints the answer.
api() {
    python3 -c 'import socket,sys
s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
s.sendall(sys.argv[2].encode() + b"\n"); s.shutdown(socket.SHUT_WR)
buf=b""
while not buf.endswith(b"\n"):
    chunk=s.recv(65536)
    if not chunk: break
    buf+=chunk
sys.stdout.write(buf.decode())' "$S/ebb.sock" "$1"
}
# refused NAME JSON WORDS: the request is a bad_request whose message
# contains WORDS.
refused() {
    local r
    r=$(api "$2")
    if [ "$(json_get "$r" 'd["error"]["code"]')" = bad_request ] &&
        contains "$(json_get "$r" 'd["error"]["message"]')" "$3"; then
        ok "$1"
    else
        not_ok "$1" "answer: $r"
    fi
}

# ebb.yaml: a team cap over the bound, a plugin integer over the bound.
config "2000000000 USD" 1
timeout 30 "$EBBD" --state-dir "$S" --config "$W/ebb.yaml" 2>"$W/err"
check "a team budget over the bound: ebbd exits 2" test $? = 2
check "the message names file, line and bound" grep -q \
    "ebb.yaml:6: teams.ml.budget: \"2000000000 USD\" is not an amount (more than 1000000000, the largest amount ebb takes" "$W/err"
check "nothing was stored" test ! -e "$S/ebb.db"
config "100 USD" 9223372036854775807
timeout 30 "$EBBD" --state-dir "$S" --config "$W/ebb.yaml" 2>"$W/err"
check "a plugin integer over the bound: ebbd exits 2" test $? = 2
check "its message names the bound" grep -q \
    "providers.sim.seed: \"9223372036854775807\" is not an integer (outside -1000000000 to 1000000000" "$W/err"

config "1000000000 USD" 1
check "ebbd starts with a cap at the bound" start_daemon "$S" --config "$W/ebb.yaml"

# A job and a schedule over the bound are refused; nothing is stored.
printf 'name: rich\nrun: [x]\nwork: 1h\nbudget: 1000000000.000001 USD\n' >"$W/rich.yaml"
expect_exit 2 "a job budget over the bound is refused" e submit "$W/rich.yaml"
check "with its line and the bound" contains "$ERR" \
    "rich.yaml:4: budget: \"1000000000.000001 USD\" is not an amount (more than 1000000000"
printf 'name: richer\ncron: "@daily"\nwindow: 6h\nbudget: 5000000000 USD\njob: {run: [x], work: 1h}\n' >"$W/richer.yaml"
expect_exit 2 "a schedule budget over the bound is refused" e schedule add "$W/richer.yaml"
check "with its line" contains "$ERR" "richer.yaml:4: budget:"
printf 'name: many\nrun: [x]\nwork: 1h\nmax_retries: 1001\n' >"$W/many.yaml"
expect_exit 2 "retries over the bound are refused" e submit "$W/many.yaml"
check "with the bound" contains "$ERR" "max_retries: 1001 must be between 0 and 1000"
expect_exit 0 "jobs" e jobs --all --json
check "no job was stored" test "$(json_get "$OUT" 'len(d["jobs"])')" = 0
expect_exit 0 "schedules" e schedule list --json
check "no schedule was stored" test "$(json_get "$OUT" 'len(d["schedules"])')" = 0

# Integer API params.
printf 'name: ok\nrun: [x]\nwork: 1h\nbudget: 10 USD\n' >"$W/ok.yaml"
expect_exit 0 "a job within the bounds" e submit "$W/ok.yaml"
JOB=$OUT
refused "logs: a negative offset" \
    "{\"id\":1,\"method\":\"logs\",\"params\":{\"id\":\"$JOB\",\"offset\":-1}}" "offset: expected a byte offset from 0 to"
refused "logs: an offset over 1 TiB" \
    "{\"id\":1,\"method\":\"logs\",\"params\":{\"id\":\"$JOB\",\"offset\":9223372036854775807}}" "offset: expected a byte offset"
refused "forecast: a horizon over 100 years" \
    '{"id":1,"method":"forecast","params":{"horizon":9223372036854775807}}' "horizon: 9223372036854775807 ms is not a duration from 0 to 100 years"
refused "forecast: a negative step" \
    '{"id":1,"method":"forecast","params":{"step":-1}}' "step: -1 ms is not a duration"
refused "forecast: a time past 9999" \
    '{"id":1,"method":"forecast","params":{"at":9223372036854775807}}' "at: 9223372036854775807 ms is outside the years 0000 to 9999"
refused "report: a time before 0000" \
    '{"id":1,"method":"report","params":{"since":-9223372036854775808}}' "since: -9223372036854775808 ms is outside the years"
refused "prices history: a time past 9999" \
    '{"id":1,"method":"prices","params":{"history":true,"until":253402300800000}}' "until: 253402300800000 ms is outside the years"
R=$(api '{"id":1,"method":"prices","params":{"history":true,"until":253402300799999}}')
check "prices history: the last ms of 9999 is taken" test "$(json_get "$R" '"result" in d')" = True
expect_exit 0 "ebbd still answers" e status

stop_daemon TERM
check "ebbd stops cleanly" test "$DAEMON_EXIT" = 0
finish
