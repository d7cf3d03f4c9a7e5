#!/usr/bin/env bash
# A job's `workdir:` at `ebb submit`: resolved from the spec file's
# directory, packed (workdir_exclude, no links, a clear error otherwise),
# sent with workdir_put when ebbd has a store to keep it in (chunks, the
# caller's uid, the SHA-256 checked), and, for a job without a store, run
# in that directory with a warning on stderr (exit 0).
. "$(dirname "$0")/lib.sh"
here=$(cd "$(dirname "$0")" && pwd)

S="$TMP/state"
mkdir -p "$TMP/store"
chmod 0711 "$TMP"  # the other user of the uid check reaches the socket
cat >"$TMP/ebb.yaml" <<YAML
providers:
  sim:
    prices: $EBB_SOURCE_ROOT/tests/data/engine/prices_flat.csv
  local:
    agent: $here/fake_agent.py
run_on: {sim: local}
clock: {start: 2020-01-01T06:00:00Z, speed: 1200}
agent_api: {listen: 127.0.0.1:0, heartbeat: 1s}
api: {socket_mode: "0666"}
stores:
  ckpt: {url: "file://$TMP/store"}
YAML
mkdir -p "$TMP/proj/code/sub" "$TMP/proj/code/.git" "$TMP/proj/code/data" "$TMP/elsewhere"
echo "print('hi')" >"$TMP/proj/code/train.py"
echo weights >"$TMP/proj/code/sub/model.pt"
echo git >"$TMP/proj/code/.git/HEAD"
head -c 3000000 /dev/urandom >"$TMP/proj/code/data/big"
head -c 1500000 /dev/urandom >"$TMP/proj/code/sub/vocab.bin"  # several chunks
cat >"$TMP/proj/job.yaml" <<YAML
name: wd
run: [python3, train.py]
work: 30m
resources: {instance_types: [p3.2xlarge]}
market: on-demand
workdir: code
workdir_exclude: [.git, "*.pt", data/]
YAML
check "ebbd starts" start_daemon "$S" --config "$TMP/ebb.yaml"

# Submitted from elsewhere: workdir is relative to the spec file.
cd "$TMP/elsewhere" || exit 1
expect_exit 0 "submit with a workdir" "$EBB" --state-dir "$S" submit ../proj/job.yaml
ID=$OUT
check "it warns that without a store the job runs in the directory itself" \
    contains "$ERR" "ebb submit: warning: ../proj/job.yaml:6: workdir: the job has no checkpoint store to keep its packed workdir in, so it runs in $TMP/proj/code itself"
check "the packed workdir was sent and its hash checked" \
    grep -q "workdir [0-9a-f]\{64\} spooled for uid $(id -u): " "$S.log"
check "... and dropped at submit, unused" test -z "$(ls -A "$S/spool")"
for _ in $(seq 1 200); do
    grep -qs "^workdir " "$S/plugins/local/"*.agent.log && break
    sleep 0.05
done
check "the job runs in the workdir, resolved from the spec's directory" \
    grep -qx "workdir $TMP/proj/code" "$S/plugins/local/$ID-a1.agent.log"
expect_exit 0 "cancel" "$EBB" --state-dir "$S" cancel "$ID"

# Packing errors name the spec's line and what is wrong; nothing is stored.
sed 's/^workdir: code$/workdir: nosuch/' "$TMP/proj/job.yaml" >"$TMP/proj/missing.yaml"
expect_exit 2 "a missing workdir is refused" "$EBB" --state-dir "$S" submit "$TMP/proj/missing.yaml"
check "... with file:line" contains "$ERR" "missing.yaml:6: workdir: $TMP/proj/nosuch: No such file or directory"
ln -s /etc "$TMP/proj/code/sub/etc"
expect_exit 2 "a workdir holding a link is refused" "$EBB" --state-dir "$S" submit "$TMP/proj/job.yaml"
check "... naming it" contains "$ERR" "job.yaml:6: workdir: sub/etc is a symbolic link; a workdir is packed without links"
sed 's/^workdir_exclude: .*/workdir_exclude: [.git, "*.pt", data\/, etc]/' "$TMP/proj/job.yaml" >"$TMP/proj/skip.yaml"
expect_exit 0 "the link left out by workdir_exclude packs" "$EBB" --state-dir "$S" submit "$TMP/proj/skip.yaml"
expect_exit 0 "cancel" "$EBB" --state-dir "$S" cancel "$OUT"
rm "$TMP/proj/code/sub/etc"
expect_exit 0 "jobs --all" "$EBB" --state-dir "$S" jobs --all --json
check "the refused submits stored nothing" test "$(json_get "$OUT" 'len(d["jobs"])')" = 2
# A submit naming no packed workdir (not through ebb submit) is refused.
API=$(python3 - "$S/ebb.sock" "$TMP/proj/job.yaml" <<'PY'
import json, socket, sys
def call(method, params, sock=sys.argv[1]):
    c = socket.socket(socket.AF_UNIX)
    c.connect(sock)
    c.sendall(json.dumps({"id": 1, "method": method, "params": params}).encode() + b"\n")
    c.shutdown(socket.SHUT_WR)
    return json.loads(c.makefile().readline())
print(json.dumps(call("submit", {"file": "job.yaml", "yaml": open(sys.argv[2]).read(),
                                 "workdir": "/tmp"})))
PY
)
check "a submit with workdir: but no packed workdir is refused" \
    contains "$(json_get "$API" 'd["error"]["message"]')" "job.yaml: the spec has workdir: but the submit names no packed workdir"

# workdir_put itself: offsets, the hash, the caller's uid.
R=$(python3 - "$S/ebb.sock" <<'PY'
import base64, hashlib, json, os, socket, sys
def call(params):
    c = socket.socket(socket.AF_UNIX)
    c.connect(sys.argv[1])
    c.sendall(json.dumps({"id": 1, "method": "workdir_put", "params": params}).encode() + b"\n")
    c.shutdown(socket.SHUT_WR)
    a = json.loads(c.makefile().readline())
    return a.get("result") or a["error"]
out = {}
data = os.urandom(700000)
sha = hashlib.sha256(data).hexdigest()
b64 = lambda b: base64.b64encode(b).decode()
out["begin"] = call({"sha256": sha, "size": len(data)})
out["skip"] = call({"sha256": sha, "size": len(data), "offset": 5, "data": b64(data[5:10])})
out["first"] = call({"sha256": sha, "size": len(data), "offset": 0, "data": b64(data[:400000])})
if os.getuid() == 0:  # another user may not continue it
    rd, wr = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.setuid(65534)
        r = call({"sha256": sha, "size": len(data), "offset": 400000, "data": b64(data[400000:])})
        os.write(wr, json.dumps(r).encode())
        os._exit(0)
    os.close(wr)
    os.waitpid(pid, 0)
    out["other_uid"] = json.loads(os.read(rd, 65536))
out["rest"] = call({"sha256": sha, "size": len(data), "offset": 400000, "data": b64(data[400000:])})
out["again"] = call({"sha256": sha, "size": len(data)})
bad = hashlib.sha256(b"other").hexdigest()
call({"sha256": bad, "size": 4})
out["badsum"] = call({"sha256": bad, "size": 4, "offset": 0, "data": b64(b"four")})
out["badid"] = call({"sha256": "XYZ", "size": 4})
print(json.dumps(out))
PY
)
check "a begun upload starts at offset 0" test "$(json_get "$R" 'd["begin"]')" = "{'needed': True, 'offset': 0}"
check "a chunk at another offset is refused" contains "$(json_get "$R" 'd["skip"]["message"]')" "expected the chunk at offset 0 of 700000 bytes"
check "chunks move the offset on" test "$(json_get "$R" 'd["first"]["offset"]')" = 400000
check "the last chunk completes it" test "$(json_get "$R" 'd["rest"]["offset"]')" = 700000
check "a workdir ebbd holds is not sent again" test "$(json_get "$R" 'd["again"]["needed"]')" = False
check "bytes whose hash is not the one named are refused" contains "$(json_get "$R" 'd["badsum"]["message"]')" "the bytes sent have SHA-256"
check "... and not kept" test "$(ls "$S/spool" | wc -l)" = 1
check "a bad id is refused" contains "$(json_get "$R" 'd["badid"]["message"]')" "\"sha256\" (64 lowercase hex digits)"
python3 - "$S/ebb.sock" <<'PY'
import base64, hashlib, json, os, socket, sys, time
def call(params):
    c = socket.socket(socket.AF_UNIX)
    c.connect(sys.argv[1])
    c.sendall(json.dumps({"id": 1, "method": "workdir_put", "params": params}).encode() + b"\n")
    c.shutdown(socket.SHUT_WR)
    return json.loads(c.makefile().readline())
for i in range(6):  # finished uploads no submit takes
    data = os.urandom(100)
    sha = hashlib.sha256(data).hexdigest()
    call({"sha256": sha, "size": 100})
    call({"sha256": sha, "size": 100, "offset": 0, "data": base64.b64encode(data).decode()})
    time.sleep(1.05)  # distinct modification times: the oldest goes first
PY
check "at most 4 finished tars per user stay in the spool" test "$(ls "$S/spool" | wc -l)" = 4
if [ "$(id -u)" = 0 ]; then
    check "another user cannot add to an upload (root runs this check)" \
        contains "$(json_get "$R" 'd["other_uid"]["message"]')" "no upload of"
fi
stop_daemon TERM
check "ebbd stops cleanly" test "$DAEMON_EXIT" = 0

# What a preemption costs a spot job without a store where disks die with
# their instances (vastai here, which never answers: nothing runs; local
# with its default private disks).
warn_config() { # warn_config RUN_ON_LINE [LOCAL_DISK]
    cat <<YAML
providers:
  vastai: {api_url: "http://127.0.0.1:9", gpu_names: ["RTX 4090"]}
  local: {agent: $here/fake_agent.py, disk: ${2:-private}}
$1
agent_api: {listen: 127.0.0.1:0}
YAML
}
cat >"$TMP/spot.yaml" <<YAML
name: spotty
run: [python3, train.py]
work: 1h
market: spot
resources: {providers: [vastai]}
YAML
W="$TMP/warn"
warn_config "" >"$TMP/warn.yaml"
VAST_API_KEY=test-key check "ebbd starts with vastai" start_daemon "$W" --config "$TMP/warn.yaml"
expect_exit 0 "a spot job for vastai without a store is accepted" "$EBB" --state-dir "$W" submit "$TMP/spot.yaml"
check "... warned what a preemption costs it" contains "$ERR" \
    "ebb submit: warning: $TMP/spot.yaml: a spot job without a checkpoint store: on vastai its checkpoints stay on the instance's disk, which a preemption takes with the instance, so every preemption costs it all the work done since it started (name a store in checkpoint.store to resume where it stopped)"
expect_exit 0 "submit --json" "$EBB" --state-dir "$W" submit "$TMP/spot.yaml" --json
check "... the API answer carries it in warnings" test "$(json_get "$OUT" 'len(d["warnings"])')" = 1
sed 's/^market: spot$/market: on-demand/' "$TMP/spot.yaml" >"$TMP/od.yaml"
expect_exit 0 "an on-demand job" "$EBB" --state-dir "$W" submit "$TMP/od.yaml"
check "... is not warned" test -z "$ERR"
sed 's/providers: \[vastai\]/providers: [local]/' "$TMP/spot.yaml" >"$TMP/local.yaml"
expect_exit 0 "a spot job for local" "$EBB" --state-dir "$W" submit "$TMP/local.yaml"
check "... is warned too: a local instance's disk is private by default" contains "$ERR" \
    "on local its checkpoints stay on the instance's disk"
printf 'checkpoint: {dir: %s/ckpt}\n' "$TMP" >>"$TMP/local.yaml"
expect_exit 0 "a spot job for local naming a directory of this machine" \
    "$EBB" --state-dir "$W" submit "$TMP/local.yaml"
check "... is not warned (its checkpoints outlive the instance)" test -z "$ERR"
stop_daemon TERM
warn_config "run_on: {vastai: local}" shared >"$TMP/runon.yaml"
VAST_API_KEY=test-key check "ebbd starts with vastai run on local, disk: shared" \
    start_daemon "$W.2" --config "$TMP/runon.yaml"
expect_exit 0 "a spot job for vastai run on local" "$EBB" --state-dir "$W.2" submit "$TMP/spot.yaml"
check "... is not warned (local's instances share this machine's disk)" test -z "$ERR"
stop_daemon TERM
finish
