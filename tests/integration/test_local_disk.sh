#!/usr/bin/env bash
# The local provider's disks (docs/local.md): with `disk: private` (the
# default) each instance gets PLUGIN_DIR/disks/<token>, its user's, mode
# 0700, as the agent's --disk, removed once when the instance ends, links
# in it removed as links; also for instances that ended while no ebbd ran.
# With `disk: shared` the agent gets no --disk. The agent is fake_agent.py,
# which leaves files, an unwritable directory and links out of its disk.
. "$(dirname "$0")/lib.sh"
here=$(cd "$(dirname "$0")" && pwd)

config() { # config DISK_LINE
    cat <<YAML
providers:
  sim:
    prices: $EBB_SOURCE_ROOT/tests/data/engine/prices_flat.csv
    preempt_after: 2h
    notice_lead: 2m
  local:
    agent: $here/fake_agent.py
$1
run_on: {sim: local}
clock: {start: 2020-01-01T06:00:00Z, speed: 1200}
agent_api: {listen: 127.0.0.1:0, heartbeat: 1s}
YAML
}
cat >"$TMP/job.yaml" <<YAML
name: disk-train
run: [python3, train.py]
work: 2h
resources: {instance_types: [p3.2xlarge]}
market: spot
checkpoint: {grace: 30s, dir: $TMP/ckpt}
YAML

job_state() {
    "$EBB" --state-dir "$1" job show "$2" --json 2>/dev/null |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])'
}
wait_state() { # wait_state DIR ID STATE
    for _ in $(seq 1 600); do
        [ "$(job_state "$1" "$2")" = "$3" ] && return 0
        sleep 0.1
    done
    return 1
}

config "    disk: bogus" >"$TMP/bad.yaml"
"$EBBD" --state-dir "$TMP/bad" --config "$TMP/bad.yaml" 2>"$TMP/bad.log" &
pid=$!
for _ in $(seq 1 100); do kill -0 $pid 2>/dev/null || break; sleep 0.05; done
wait $pid
check "a disk that is neither private nor shared fails ebbd's start" test $? -ne 0
check "... saying so" grep -q 'disk: "bogus" is not private or shared' "$TMP/bad.log"

# Private disks (the default), through preemptions.
S="$TMP/state"
D="$S/plugins/local/disks"
config "" >"$TMP/ebb.yaml"
check "ebbd starts" start_daemon "$S" --config "$TMP/ebb.yaml"
expect_exit 0 "submit" "$EBB" --state-dir "$S" submit "$TMP/job.yaml"
ID=$OUT
check "a spot job on local whose checkpoint.dir outlives the private disk is not warned" \
    test -z "$ERR"
check "the job succeeds" wait_state "$S" "$ID" succeeded
expect_exit 0 "job show" "$EBB" --state-dir "$S" job show "$ID" --json
tokens=$(json_get "$OUT" '" ".join(sorted(i["token"] for i in d["instances"]))')
n=$(echo "$tokens" | wc -w)
check "it ran on several instances" test "$n" -ge 2
me=$(id -u)
for t in $tokens; do
    check "instance $t was given its own disk, 0700, the job's user's" \
        grep -qx "disk $D/$t 700 $me" "$S/plugins/local/$t.agent.log"
    check "... removed exactly once" \
        test "$(grep -c "removed the disk of instance $t\$" "$S.log")" = 1
    check "... and its log, which a link in the disk named, is still there" \
        test -s "$S/plugins/local/$t.agent.log"
done
check "no disk is left" test -z "$(ls -A "$D")"
check "ebbd's own files beside the disks are all there" \
    test "$(ls "$S/plugins/local/$ID"-*.agent.log | wc -l)" -eq "$n"

# An instance that ends while no ebbd runs: its disk goes when ebbd comes
# back and finds it gone; a disk no instance owns goes too.
expect_exit 0 "submit a second job" "$EBB" --state-dir "$S" submit "$TMP/job.yaml"
ID2=$OUT
check "it runs" wait_state "$S" "$ID2" running
for _ in $(seq 1 100); do [ -n "$(ls -A "$D")" ] && break; sleep 0.05; done
t2=$(ls "$D")
check "its instance has a disk" test -n "$t2" -a -d "$D/$t2"
for _ in $(seq 1 100); do [ -e "$D/$t2/up" ] && break; sleep 0.05; done
stop_daemon KILL
agent=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' \
        "$S/plugins/local/$t2.json")
kill -KILL "$agent"
mkdir -p "$D/orphan/sub" && : >"$D/orphan/sub/file"
check "ebbd starts again" start_daemon "$S" --config "$TMP/ebb.yaml"
for _ in $(seq 1 100); do [ ! -e "$D/$t2" ] && [ ! -e "$D/orphan" ] && break; sleep 0.1; done
check "the disk of the instance that ended meanwhile is removed" test ! -e "$D/$t2"
check "... and the orphan disk" test ! -e "$D/orphan"
check "the plugin directory survived the disk's link to it" \
    test -f "$S/plugins/local/$t2.agent.log"
expect_exit 0 "cancel the second job" "$EBB" --state-dir "$S" cancel "$ID2"
check "the plugin directory is searchable by the jobs' users, not listable" \
    test "$(stat -c %a "$S/plugins/local")" = 711
# Without a store or a directory of its own a job checkpoints on the
# instance's private disk, and the checkpoint dies with it, as on a cloud:
# its next instance starts from nothing (and the job was warned).
grep -v '^checkpoint:' "$TMP/job.yaml" >"$TMP/ondisk.yaml"
echo "checkpoint: {grace: 30s}" >>"$TMP/ondisk.yaml"
expect_exit 0 "a spot job that names no checkpoint.dir" "$EBB" --state-dir "$S" submit "$TMP/ondisk.yaml"
ID3=$OUT
check "... is warned that a preemption costs it its work" contains "$ERR" \
    "on local its checkpoints stay on the instance's disk"
for _ in $(seq 1 600); do
    [ -s "$S/plugins/local/$ID3-a2.agent.log" ] && grep -qs '^resume ' "$S/plugins/local/$ID3-a2.agent.log" && break
    sleep 0.1
done
check "its first instance checkpointed on its own disk" \
    grep -qx "checkpoints $D/$ID3-a1/checkpoints/$ID3" "$S/plugins/local/$ID3-a1.agent.log"
expect_exit 0 "job show" "$EBB" --state-dir "$S" job show "$ID3" --json
check "... and made a checkpoint there before it was preempted" \
    test "$(json_get "$OUT" 'any(c["path"].startswith("'"$D/$ID3-a1/"'") for c in d["checkpoints"])')" = True
check "... and its second starts from nothing" \
    grep -qx "resume none" "$S/plugins/local/$ID3-a2.agent.log"
"$EBB" --state-dir "$S" cancel "$ID3" >/dev/null 2>&1
# A user who cannot reach the state directory (0700 here) runs without a
# disk of its own rather than not at all (root runs this check: run_as).
if [ "$(id -u)" = 0 ]; then
    sed 's/^name: disk-train$/name: theirs\nrun_as: nobody/' "$TMP/job.yaml" >"$TMP/theirs.yaml"
    expect_exit 0 "root submits a job run as nobody" "$EBB" --state-dir "$S" submit "$TMP/theirs.yaml"
    ID4=$OUT
    for _ in $(seq 1 200); do
        grep -qs "^no disk$" "$S/plugins/local/$ID4-a1.agent.log" && break
        sleep 0.05
    done
    check "its agent got no --disk" grep -qx "no disk" "$S/plugins/local/$ID4-a1.agent.log"
    check "... and ebbd says why" grep -q "job $ID4: its user cannot enter $D/$ID4-a1, so the instance gets no disk of its own" "$S.log"
    check "... leaving no disk behind" test ! -e "$D/$ID4-a1"
    "$EBB" --state-dir "$S" cancel "$ID4" >/dev/null 2>&1
fi
stop_daemon TERM
check "ebbd stops cleanly" test "$DAEMON_EXIT" = 0

# Shared: the agent gets no --disk and no disk is made.
S="$TMP/shared"
config "    disk: shared" >"$TMP/shared.yaml"
check "ebbd starts with disk: shared" start_daemon "$S" --config "$TMP/shared.yaml"
expect_exit 0 "submit" "$EBB" --state-dir "$S" submit "$TMP/job.yaml"
ID3=$OUT
check "the job succeeds" wait_state "$S" "$ID3" succeeded
check "its agents were given no disk" \
    test "$(cat "$S/plugins/local/"*.agent.log | grep -c '^disk ')" = 0 -a \
         "$(cat "$S/plugins/local/"*.agent.log | grep -c '^no disk$')" -ge 1
check "no disk was made" test -z "$(ls -A "$S/plugins/local/disks" 2>/dev/null)"
stop_daemon TERM
finish
