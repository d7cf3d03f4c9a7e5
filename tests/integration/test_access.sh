#!/usr/bin/env bash
# Who may do what: ebbd serves two users through one socket (api.socket_mode
# 0666), identifies each caller by SO_PEERCRED, records the owner of each
# job, and lets only the owner, root or a configured admin cancel a job or
# read its logs. Run as root (as CI does): the second user is `nobody`.
. "$(dirname "$0")/lib.sh"
here=$(cd "$(dirname "$0")" && pwd)

if [ "$(id -u)" -ne 0 ]; then
    not_ok "runs as root" "this test switches to the user nobody; run it as root"
    finish
fi
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$@"; }

# Everything nobody must read lives in a directory it can read.
W="$TMP/world"
mkdir -p "$W"
chmod 755 "$TMP" "$W"
S="$W/state"
cat >"$W/ebb.yaml" <<YAML
api: {socket_mode: "0666"}
providers:
  sim:
    prices: $EBB_SOURCE_ROOT/tests/data/engine/prices_flat.csv
  local:
    agent: $here/fake_agent.py
run_on: {sim: local}
teams:
  ml: {members: [root]}
clock: {start: 2020-01-01T06:00:00Z, speed: 60}
agent_api: {listen: 127.0.0.1:0, heartbeat: 1s}
YAML
cat >"$W/job.yaml" <<YAML
name: slow
run: [python3, train.py]
work: 24h
resources: {instance_types: [p3.2xlarge]}
market: spot
YAML
sed 's/^name: slow$/name: slow\nteam: ml/' "$W/job.yaml" >"$W/team-job.yaml"
chmod 644 "$W/ebb.yaml" "$W/job.yaml" "$W/team-job.yaml"
check "ebbd starts" start_daemon "$S" --config "$W/ebb.yaml"
check "socket mode as configured" test "$(stat -c %a "$S/ebb.sock")" = 666
check "state dir only traversable by others" test "$(stat -c %a "$S")" = 711
check "the database stays private" test "$(stat -c %a "$S/ebb.db")" = 600

expect_exit 0 "nobody submits" as_nobody "$EBB" --state-dir "$S" submit "$W/job.yaml"
THEIRS=$OUT
expect_exit 0 "root submits" "$EBB" --state-dir "$S" submit "$W/job.yaml"
MINE=$OUT
expect_exit 0 "job show" "$EBB" --state-dir "$S" job show "$THEIRS" --json
check "owner recorded from SO_PEERCRED" test "$(json_get "$OUT" 'd["owner_uid"]')" = 65534
check "a member of one team submits for it" test "$(json_get "$OUT" 'd["team"]')" = ""
expect_exit 0 "root's job show" "$EBB" --state-dir "$S" job show "$MINE" --json
check "root's job counts against team ml" test "$(json_get "$OUT" 'd["team"]')" = ml
expect_exit 1 "nobody may not submit for team ml" as_nobody "$EBB" --state-dir "$S" submit "$W/team-job.yaml"
check "team refusal says why" contains "$ERR" "nobody is not a member of team ml"
expect_exit 0 "nobody lists jobs" as_nobody "$EBB" --state-dir "$S" jobs --all
check "nobody sees both" contains "$OUT" "$MINE"

expect_exit 1 "nobody may not cancel root's job" as_nobody "$EBB" --state-dir "$S" cancel "$MINE"
check "refusal says why" contains "$ERR" "belongs to uid 0; only its owner or an admin"
expect_exit 1 "nobody may not read root's logs" as_nobody "$EBB" --state-dir "$S" logs "$MINE"
check "logs refusal says why" contains "$ERR" "only its owner or an admin"
check "the refusal is logged" grep -q "refused cancel of job $MINE to uid 65534" "$S.log"
expect_exit 0 "root's job still runs" "$EBB" --state-dir "$S" job show "$MINE" --json
check "not cancelled" test "$(json_get "$OUT" 'd["state"]')" != cancelled

expect_exit 0 "nobody reads its own logs" as_nobody "$EBB" --state-dir "$S" logs "$THEIRS"
expect_exit 0 "nobody cancels its own job" as_nobody "$EBB" --state-dir "$S" cancel "$THEIRS"
expect_exit 0 "root (an admin) cancels root's job" "$EBB" --state-dir "$S" cancel "$MINE"

stop_daemon TERM
check "ebbd stops cleanly" test "$DAEMON_EXIT" = 0
finish
