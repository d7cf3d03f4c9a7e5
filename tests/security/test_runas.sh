#!/usr/bin/env bash
# Jobs run as their owners (docs/security.md, "Jobs run as their owners";
# #15 findings 1 and 8). ebbd runs the sim market with real local
# instances (the real ebb-agent), once as root, once as the service user
# ebbsec-svc with CAP_SETUID, CAP_SETGID and CAP_KILL (as the shipped unit
# grants them), and once as ebbsec-svc without them. A job's `id -u` is its
# owner's (or its run_as user's), it holds no capabilities, cannot read
# ebb.db or ebbd's environment, uses only its own user's directories, and
# its agent removes only the checkpoints it marked; no ebb-agent is left a
# zombie after the jobs end.
. "$(dirname "$0")/lib.sh"

SECRET="ebbd-secret-$$"
REAL_EBBD=$EBBD
ROOT_EBBD=$EBBD
ebb_as() { local user=$1; shift; as "$user" "$EBB" --state-dir "$S" "$@"; }

# submit_in USER DIR SPEC: `ebb submit SPEC` by USER from DIR (the job's
# workdir), output in $OUT/$ERR as expect_exit leaves them.
submit_in() {
    local user=$1 dir=$2 spec=$3
    if [ "$user" = root ]; then
        (cd "$dir" && "$EBB" --state-dir "$S" submit "$spec")
    else
        as "$user" sh -c 'cd "$1" && exec "$2" --state-dir "$3" submit "$4"' \
            sh "$dir" "$EBB" "$S" "$spec"
    fi
}

# state_of ID: the job's state, as root sees it.
state_of() {
    "$EBB" --state-dir "$S" job show "$1" --json 2>/dev/null |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])' 2>/dev/null
}
# wait_end ID: polls (60 s at most) until the job has ended; its state in
# $STATE.
wait_end() {
    STATE=""
    [ -n "$1" ] || return 1
    for _ in $(seq 1 600); do
        STATE=$(state_of "$1")
        case "$STATE" in succeeded|failed|cancelled) return 0 ;; esac
        sleep 0.1
    done
    return 1
}
wait_state() {
    [ -n "$1" ] || return 1
    for _ in $(seq 1 600); do
        [ "$(state_of "$1")" = "$2" ] && return 0
        sleep 0.1
    done
    return 1
}

# zombies PID: how many defunct children process PID has.
zombies() {
    python3 - "$1" <<'PY'
import os, sys
parent, n = sys.argv[1], 0
for pid in filter(str.isdigit, os.listdir('/proc')):
    try:
        stat = open('/proc/%s/stat' % pid).read()
    except OSError:
        continue
    fields = stat[stat.rindex(')') + 2:].split()
    if fields[0] == 'Z' and fields[1] == parent:
        n += 1
print(n)
PY
}
# no_zombies PID: defunct children are reaped within a few watch
# intervals (1 s each); before #15 finding 8 they stayed forever.
no_zombies() {
    for _ in $(seq 1 100); do
        [ "$(zombies "$1")" = 0 ] && return 0
        sleep 0.1
    done
    echo "# $(zombies "$1") defunct children of ebbd $1" >&2
    return 1
}

# A directory each user owns, for workdirs and checkpoints.
for u in ebbsec-alice ebbsec-bob ebbsec-svc; do
    mkdir -p "$W/$u"
    chown "$u:$u" "$W/$u"
    chmod 700 "$W/$u"
done
A="$W/ebbsec-alice"

# write_config [PRICES [AVAILABILITY]]: the sim market on PRICES (default:
# the flat prices of p3.2xlarge and p3.8xlarge) with spot capacity as
# AVAILABILITY says (default: unlimited), run on local.
write_config() {
    cat >"$W/ebb.yaml" <<YAML
api: {socket_mode: "0666"}
providers:
  sim:
    prices: ${1:-$EBB_SOURCE_ROOT/tests/data/engine/prices_flat.csv}
${2:+    availability: $2}
  local: {}
run_on: {sim: local}
admins: [ebbsec-bob]
clock: {start: 2020-01-01T06:00:00Z, speed: 600}
agent_api: {listen: 127.0.0.1:0, heartbeat: 1s}
YAML
    chmod 644 "$W/ebb.yaml"
}

# whoami.yaml: a job that writes who it is into its workdir.
# spec_whoami FILE [EXTRA-LINES]
spec_whoami() {
    cat >"$1" <<YAML
name: whoami
shell: true
run: |
  id -u > out.uid
  grep -E '^Cap(Eff|Prm|Amb):' /proc/self/status > out.caps
  awk '/^Uid:/ {print \$2}' /proc/\$PPID/status > out.agent_uid
  if cat "$S/ebb.db" >/dev/null 2>&1; then echo readable; else echo refused; fi > out.db
  if tr '\\0' '\\n' </proc/$DAEMON_PID/environ 2>/dev/null | grep -q EBBSEC_SECRET; then echo readable; else echo refused; fi > out.environ
  env > out.env
  echo "\$EBB_CHECKPOINT_DIR" > out.ckpt
work: 1m
resources: {instance_types: [p3.2xlarge]}
market: spot
max_retries: 0
${2:-}
YAML
    chmod 644 "$1"
}

# check_whoami DIR UID NAME [own]: the job that ran in DIR ran as UID,
# with no capabilities (unless root), and read neither ebb.db nor ebbd's
# env; "own" for the service user's own job, which shares ebbd's user and
# so may read them (docs/security.md says so).
check_whoami() {
    local dir=$1 uid=$2 what=$3 own=${4:-}
    check "$what: id -u is $uid" test "$(cat "$dir/out.uid" 2>/dev/null)" = "$uid"
    check "$what: its agent runs as $uid too" test "$(cat "$dir/out.agent_uid" 2>/dev/null)" = "$uid"
    check "$what: its files are its user's" test "$(stat -c %u "$dir/out.uid" 2>/dev/null)" = "$uid"
    if [ "$uid" != 0 ]; then
        check "$what: no capabilities (CapEff, CapPrm, CapAmb all 0)" \
            test "$(awk '{print $2}' "$dir/out.caps" 2>/dev/null | sort -u)" = 0000000000000000
    fi
    if [ "$uid" != 0 ] && [ -z "$own" ]; then
        check "$what: cannot read ebb.db" test "$(cat "$dir/out.db" 2>/dev/null)" = refused
        check "$what: cannot read ebbd's /proc/PID/environ" \
            test "$(cat "$dir/out.environ" 2>/dev/null)" = refused
    fi
    check "$what: ebbd's environment is not the job's" sh -c "! grep -q EBBSEC_SECRET '$dir/out.env'"
}

# ---- ebbd as root -------------------------------------------------------
S="$W/state-root"
write_config
export EBBSEC_SECRET=$SECRET
check "ebbd starts as root" start_daemon "$S" --config "$W/ebb.yaml"
unset EBBSEC_SECRET
EBBD_PID=$DAEMON_PID

spec_whoami "$A/whoami.yaml"
expect_exit 0 "alice submits" submit_in ebbsec-alice "$A" "$A/whoami.yaml"
JA=$OUT
check "alice's job succeeds" wait_end "$JA"
check "  (state succeeded)" test "$STATE" = succeeded
check_whoami "$A" "$ALICE_UID" "alice's job under root's ebbd"
check "alice's default checkpoint dir is in her home" \
    test "$(cat "$A/out.ckpt")" = "/home/ebbsec-alice/.local/state/ebb/checkpoints/$JA"
check "  and belongs to her" test "$(stat -c %u "/home/ebbsec-alice/.local/state/ebb/checkpoints/$JA")" = "$ALICE_UID"

mkdir -p "$W/root-wd" && chmod 755 "$W/root-wd"
spec_whoami "$W/root-wd/whoami.yaml"
expect_exit 0 "root submits" submit_in root "$W/root-wd" "$W/root-wd/whoami.yaml"
check "root's job succeeds" wait_end "$OUT"
check "root's job runs as root" test "$(cat "$W/root-wd/out.uid")" = 0

# run_as: root may name an unprivileged user; others may not.
B="$W/ebbsec-bob"
spec_whoami "$B/whoami.yaml" "run_as: ebbsec-bob"
expect_exit 0 "root submits with run_as: ebbsec-bob" submit_in root "$B" "$B/whoami.yaml"
check "the run_as job succeeds" wait_end "$OUT"
check_whoami "$B" "$BOB_UID" "root's run_as: ebbsec-bob job"
spec_whoami "$A/runas-bob.yaml" "run_as: ebbsec-bob"
expect_exit 1 "alice may not run_as ebbsec-bob" submit_in ebbsec-alice "$A" "$A/runas-bob.yaml"
check "the refusal says who may" contains "$ERR" "run_as: only root or an admin"
spec_whoami "$A/runas-self.yaml" "run_as: ebbsec-alice"
expect_exit 0 "alice may name herself" submit_in ebbsec-alice "$A" "$A/runas-self.yaml"
check "her run_as job succeeds" wait_end "$OUT"
check "  (state succeeded)" test "$STATE" = succeeded
spec_whoami "$W/root-wd/nobody.yaml" "run_as: ebbsec-no-such-user"
expect_exit 2 "an unknown run_as user is refused" submit_in root "$W/root-wd" "$W/root-wd/nobody.yaml"
check "  saying so" contains "$ERR" "no user named ebbsec-no-such-user"
# An admin who is not root may name an unprivileged user, never root.
P="$W/alice-shared"
mkdir -p "$P" && chown ebbsec-alice:ebbsec-alice "$P" && chmod 755 "$P"
spec_whoami "$B/runas-alice.yaml" "run_as: ebbsec-alice"
expect_exit 0 "bob (an admin) submits with run_as: ebbsec-alice" \
    submit_in ebbsec-bob "$P" "$B/runas-alice.yaml"
check "  the job succeeds" wait_end "$OUT"
check "  as alice" test "$(cat "$P/out.uid" 2>/dev/null)" = "$ALICE_UID"
spec_whoami "$B/runas-root.yaml" "run_as: root"
expect_exit 1 "bob (an admin) may not run_as root" submit_in ebbsec-bob "$B" "$B/runas-root.yaml"
check "  saying run_as names only unprivileged users" contains "$ERR" "run_as: root is uid 0"
spec_whoami "$W/root-wd/root.yaml" "run_as: root"
expect_exit 0 "root naming itself is accepted" submit_in root "$W/root-wd" "$W/root-wd/root.yaml"
check "  and runs" wait_end "$OUT"

# Another user's directory as checkpoint.dir: refused, nothing deleted.
HB=$(getent passwd ebbsec-bob | cut -d: -f6)
printf 'alias ll=ls\n' >"$HB/.bashrc"
mkdir -p "$HB/.ssh"
printf 'ssh-ed25519 AAAA bob\n' >"$HB/.ssh/authorized_keys"
chown -R ebbsec-bob:ebbsec-bob "$HB/.bashrc" "$HB/.ssh"
for who in ebbsec-alice root; do
    dir=$A
    [ "$who" = root ] && dir="$W/root-wd"
    spec_whoami "$dir/bobs-home.yaml" "checkpoint: {dir: $HB}"
    expect_exit 0 "$who submits with checkpoint.dir: bob's home" \
        submit_in "$who" "$dir" "$dir/bobs-home.yaml"
    check "  the job fails" wait_end "$OUT"
    check "  (state failed)" test "$STATE" = failed
done
ln -sfn "$HB" "$A/ckpt-link"
chown -h ebbsec-alice:ebbsec-alice "$A/ckpt-link"
spec_whoami "$A/link.yaml" "checkpoint: {dir: $A/ckpt-link}"
expect_exit 0 "alice submits with checkpoint.dir: a link to bob's home" \
    submit_in ebbsec-alice "$A" "$A/link.yaml"
check "  the job fails" wait_end "$OUT"
check "  (state failed)" test "$STATE" = failed
check "the agent says the dir is someone else's" \
    grep -q "belongs to uid $BOB_UID, not to the job's user" $S/plugins/local/*.agent.log
check "the agent says a link is refused" grep -q "is a symbolic link" $S/plugins/local/*.agent.log
check "bob's .bashrc survives" test "$(cat "$HB/.bashrc")" = "alias ll=ls"
check "bob's .ssh survives" test -s "$HB/.ssh/authorized_keys"

# The agent prunes only what it marked: the job writes five checkpoints
# (keep: 3) into a directory that already holds other files.
C="$A/ckpt"
mkdir -p "$C"
echo mine >"$C/notes.txt"
echo 'PATH=$PATH' >"$C/.profile"
touch -d 2000-01-01 "$C/notes.txt" "$C/.profile"
chown -R ebbsec-alice:ebbsec-alice "$C"
cat >"$A/five.yaml" <<YAML
name: five-checkpoints
shell: true
run: |
  for i in 1 2 3 4 5; do
    mkdir "\$EBB_CHECKPOINT_DIR/.tmp-\$i"
    echo \$i > "\$EBB_CHECKPOINT_DIR/.tmp-\$i/state"
    mv "\$EBB_CHECKPOINT_DIR/.tmp-\$i" "\$EBB_CHECKPOINT_DIR/step-\$i"
    sleep 0.3
  done
work: 1m
resources: {instance_types: [p3.2xlarge]}
market: spot
max_retries: 0
checkpoint: {dir: $C}
YAML
chmod 644 "$A/five.yaml"
expect_exit 0 "alice submits a job that writes five checkpoints" \
    submit_in ebbsec-alice "$A" "$A/five.yaml"
J5=$OUT
check "  it succeeds" wait_end "$J5"
check "the newest three marked checkpoints are kept, the older two pruned" \
    test "$(cd "$C" && ls -d step-* | tr '\n' ' ')" = "step-3 step-4 step-5 "
check "each kept one is marked as the job's" \
    test "$(cat "$C/.ebb-checkpoint.step-5")" = "$J5"
check "an unmarked older entry is never pruned" test "$(cat "$C/notes.txt")" = mine
check "an unmarked dot-file is never removed" test -s "$C/.profile"

check "no agent of root's ebbd is left a zombie" no_zombies "$EBBD_PID"
stop_daemon TERM
check "ebbd (root) stops cleanly" test "$DAEMON_EXIT" = 0

# ---- ebbd as the service user, with CAP_SETUID, CAP_SETGID, CAP_KILL ------
# start_svc CAPS: ebbd as ebbsec-svc; CAPS "+setuid,+setgid,+kill" or "".
start_svc() {
    local caps=$1
    cat >"$W/ebbd-svc" <<SH
#!/bin/sh
exec setpriv --reuid=ebbsec-svc --regid=ebbsec-svc --init-groups \
    ${caps:+--inh-caps=$caps --ambient-caps=$caps} -- "$REAL_EBBD" "\$@"
SH
    chmod 755 "$W/ebbd-svc"
    EBBD="$W/ebbd-svc"
    export EBBSEC_SECRET=$SECRET
    start_daemon "$S" --config "$W/ebb.yaml"
    local rc=$?
    unset EBBSEC_SECRET
    EBBD=$ROOT_EBBD
    return $rc
}
S="$W/state-svc"
mkdir -p "$S" && chown ebbsec-svc:ebbsec-svc "$S" && chmod 700 "$S"
# No spot capacity for p3.8xlarge here (a type ebbd does not sell at all
# would be refused at submit, as a job that could never run).
grep -v p3.2xlarge "$EBB_SOURCE_ROOT/tests/data/engine/avail_none.csv" >"$W/avail-no-8x.csv"
chmod 644 "$W/avail-no-8x.csv"
write_config "$EBB_SOURCE_ROOT/tests/data/engine/prices_flat.csv" "$W/avail-no-8x.csv"
check "ebbd starts as ebbsec-svc with CAP_SETUID, CAP_SETGID, CAP_KILL" \
    start_svc "+setuid,+setgid,+kill"
SVC_PID=$DAEMON_PID
check "ebbd runs as ebbsec-svc" test "$(stat -c %u /proc/$SVC_PID)" = "$SVC_UID"

rm -f "$A"/out.*
spec_whoami "$A/whoami.yaml"
expect_exit 0 "alice submits to the service user's ebbd" \
    submit_in ebbsec-alice "$A" "$A/whoami.yaml"
check "alice's job succeeds" wait_end "$OUT"
check_whoami "$A" "$ALICE_UID" "alice's job under ebbsec-svc's ebbd"

V="$W/ebbsec-svc"
spec_whoami "$V/whoami.yaml"
expect_exit 0 "the service user submits a job of its own" \
    submit_in ebbsec-svc "$V" "$V/whoami.yaml"
check "its job succeeds" wait_end "$OUT"
check_whoami "$V" "$SVC_UID" "the service user's own job" own

rm -f "$W/root-wd"/out.*
spec_whoami "$W/root-wd/whoami.yaml"
expect_exit 0 "root submits to the service user's ebbd" \
    submit_in root "$W/root-wd" "$W/root-wd/whoami.yaml"
check "root's job succeeds" wait_end "$OUT"
check "root's job runs as root" test "$(cat "$W/root-wd/out.uid")" = 0

# Cancelling a running job of another user stops all of its processes,
# though ebbd cannot read their environment.
cat >"$A/sleep.yaml" <<YAML
name: sleeper
run: [sleep, "3017"]
work: 1h
resources: {instance_types: [p3.2xlarge]}
market: spot
YAML
chmod 644 "$A/sleep.yaml"
expect_exit 0 "alice submits a long job" submit_in ebbsec-alice "$A" "$A/sleep.yaml"
JS=$OUT
check "  it runs" wait_state "$JS" running
for _ in $(seq 1 100); do pgrep -u ebbsec-alice -f "sleep 3017" >/dev/null && break; sleep 0.1; done
check "  as alice" sh -c 'pgrep -u ebbsec-alice -f "sleep 3017" >/dev/null'
expect_exit 0 "alice cancels it" ebb_as ebbsec-alice cancel "$JS"
check "  it is cancelled" wait_state "$JS" cancelled
gone() { ! pgrep -f "sleep 3017" >/dev/null; }
wait_gone() { for _ in $(seq 1 100); do gone && return 0; sleep 0.1; done; return 1; }
check "  and none of its processes is left" wait_gone
check "no agent of the service user's ebbd is left a zombie" no_zombies "$SVC_PID"

# A job accepted here waits for spot capacity this market does not have
# yet; ebbd then loses its capabilities (restarted without them) and the
# market (restarted with capacity everywhere) offers it.
spec_whoami "$A/later.yaml"
sed -i 's/instance_types: \[p3.2xlarge\]/instance_types: [p3.8xlarge]/' "$A/later.yaml"
expect_exit 0 "alice's job is accepted while ebbd has the capabilities" \
    submit_in ebbsec-alice "$A" "$A/later.yaml"
JW=$OUT
check "  it waits (no p3.8xlarge spot capacity)" wait_state "$JW" waiting
stop_daemon TERM
check "ebbd (ebbsec-svc) stops cleanly" test "$DAEMON_EXIT" = 0

# ---- ebbd as the service user without capabilities ----------------------
write_config
check "ebbd starts as ebbsec-svc without capabilities" start_svc ""
NOCAP_PID=$DAEMON_PID
expect_exit 1 "alice's job is refused at submit" submit_in ebbsec-alice "$A" "$A/whoami.yaml"
check "  saying which capabilities ebbd lacks" contains "$ERR" "without CAP_SETUID, CAP_SETGID and CAP_KILL"
check "  and where to read about it" contains "$ERR" "docs/security.md"
rm -f "$V"/out.*
spec_whoami "$V/whoami.yaml"
expect_exit 0 "the service user's own job is accepted" \
    submit_in ebbsec-svc "$V" "$V/whoami.yaml"
JV=$OUT
check "alice's job, accepted before, fails at launch instead of waiting forever" wait_end "$JW"
check "  (state failed)" test "$STATE" = failed
expect_exit 0 "job show of it" "$EBB" --state-dir "$S" job show "$JW" --json
check "  the reason says ebbd may not run it as alice" \
    contains "$OUT" "ebbd may not run the job as uid $ALICE_UID"
check "  the log says why" grep -q "without CAP_SETUID, CAP_SETGID and CAP_KILL" "$S.log"
check "the service user's own job succeeds" wait_end "$JV"
check "  (state succeeded)" test "$STATE" = succeeded
check_whoami "$V" "$SVC_UID" "the service user's own job without capabilities" own
check "no agent of ebbd without capabilities is left a zombie" no_zombies "$NOCAP_PID"
stop_daemon TERM
check "ebbd (no capabilities) stops cleanly" test "$DAEMON_EXIT" = 0
finish
