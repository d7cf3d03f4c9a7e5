#!/usr/bin/env bash
# ebbd running real jobs on the live sim market, instances as local
# processes: submit, jobs, job show, logs, cancel, preemption notices served
# at the metadata endpoint, checkpoints and resumption. The agent is
# fake_agent.py (ebbd's side of docs/agent-protocol.md); tests/e2e runs the
# real ebb-agent and a real training script.
. "$(dirname "$0")/lib.sh"
here=$(cd "$(dirname "$0")" && pwd)

S="$TMP/state"
cat >"$TMP/ebb.yaml" <<YAML
providers:
  sim:
    prices: $EBB_SOURCE_ROOT/tests/data/engine/prices_flat.csv
    preempt_after: 2h
    notice_lead: 2m
  local:
    agent: $here/fake_agent.py
    disk: shared   # no store: checkpoints stay on this machine's disk
run_on: {sim: local}
clock: {start: 2020-01-01T06:00:00Z, speed: 1200}
agent_api: {listen: 127.0.0.1:0, heartbeat: 1s}
YAML
cat >"$TMP/job.yaml" <<YAML
name: fake-train
run: [python3, train.py]
work: 2h
resources: {instance_types: [p3.2xlarge]}
market: spot
checkpoint: {grace: 30s}
YAML
check "ebbd starts" start_daemon "$S" --config "$TMP/ebb.yaml"

# A bad spec is refused with file:line and nothing is stored.
printf 'name: bad\nrun: [x]\nwork: forever\n' >"$TMP/bad.yaml"
expect_exit 2 "bad spec refused" "$EBB" --state-dir "$S" submit "$TMP/bad.yaml"
check "bad spec names file and line" contains "$ERR" "bad.yaml:3:"
expect_exit 0 "jobs --all" "$EBB" --state-dir "$S" jobs --all --json
check "bad spec stored nothing" test "$(json_get "$OUT" 'len(d["jobs"])')" = "0"
expect_exit 2 "missing file refused" "$EBB" --state-dir "$S" submit "$TMP/nope.yaml"
# A deadline already past (the clock starts 2020-01-01T06:00Z) is refused.
sed 's/^work: 2h$/work: 2h\ndeadline: 2019-12-31T00:00:00Z/' "$TMP/job.yaml" >"$TMP/past.yaml"
expect_exit 2 "a deadline in the past is refused" "$EBB" --state-dir "$S" submit "$TMP/past.yaml"
check "... saying so" contains "$ERR" "deadline 2019-12-31T00:00:00Z is in the past (now is 2020-01-01T"
# A checkpoint storm and a checkpoint dir out of the job's directory are
# refused at submit with the reason (#16 points 7, 8).
sed 's/^checkpoint: .*/checkpoint: {grace: 30s, every: 1ms}/' "$TMP/job.yaml" >"$TMP/storm.yaml"
expect_exit 2 "checkpoint.every: 1ms is refused" "$EBB" --state-dir "$S" submit "$TMP/storm.yaml"
check "... with the allowed range" contains "$ERR" \
    "storm.yaml:6: checkpoint.every: 1ms is outside the allowed range (0 (none), or from 1s to 7d)"
sed 's|^checkpoint: .*|checkpoint: {grace: 30s, dir: relative/../../../x}|' "$TMP/job.yaml" >"$TMP/dots.yaml"
expect_exit 2 "a checkpoint.dir climbing out with .. is refused" "$EBB" --state-dir "$S" submit "$TMP/dots.yaml"
check "... saying so" contains "$ERR" \
    "dots.yaml:6: checkpoint.dir: \"relative/../../../x\" climbs out of the job's working directory"
expect_exit 0 "jobs --all" "$EBB" --state-dir "$S" jobs --all --json
check "the past deadline stored nothing" test "$(json_get "$OUT" 'len(d["jobs"])')" = "0"

expect_exit 0 "submit" "$EBB" --state-dir "$S" submit "$TMP/job.yaml"
ID=$OUT
check "submit prints the id" test "${ID#j-}" != "$ID"
expect_exit 0 "jobs" "$EBB" --state-dir "$S" jobs
check "jobs lists it" contains "$OUT" "$ID"

state=""
for _ in $(seq 1 600); do
    state=$("$EBB" --state-dir "$S" job show "$ID" --json 2>/dev/null |
            python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])')
    [ "$state" = succeeded ] && break
    sleep 0.1
done
check "the job succeeds" test "$state" = succeeded
expect_exit 0 "job show" "$EBB" --state-dir "$S" job show "$ID" --json
J=$OUT
check "preempted at least twice" test "$(json_get "$J" 'd["preemptions"] >= 2')" = True
check "resumed from checkpoints" test "$(json_get "$J" 'len(d["checkpoints"]) >= 2')" = True
check "a notice was recorded" contains "$J" "preemption notice"
check "instances ran on local" test "$(json_get "$J" 'set(i["provider"] for i in d["instances"])')" = "{'local'}"
check "every instance ended" test "$(json_get "$J" 'all(i["state"] == "terminated" for i in d["instances"])')" = True
check "spend was billed" test "$(json_get "$J" 'd["spent_micros"] > 0')" = True
check "all work saved" test "$(json_get "$J" 'd["work_done_ms"] == d["work_ms"]')" = True
expect_exit 0 "job show (text)" "$EBB" --state-dir "$S" job show "$ID"
check "text shows the state" contains "$OUT" "state:       succeeded"
check "text shows checkpoints" contains "$OUT" "ckpt-"
expect_exit 0 "logs" "$EBB" --state-dir "$S" logs "$ID"
check "logs hold the job's output" contains "$OUT" "fake job finished"
check "logs span every instance" test "$(printf '%s\n' "$OUT" | grep -c resumes)" -ge 3
check "a wrong agent token was refused" grep -q "agent API: refused GET /v1/agent/job" "$S.log"
check "no local instance is left" test -z "$(ls "$S/plugins/local/"*.json 2>/dev/null)"

# The metadata endpoint needs its own token.
URL=$(sed -n 's/.*agents reach ebbd at \(http[^ ]*\).*/\1/p' "$S.log" | head -n 1)
code=$(curl -s -o /dev/null -w '%{http_code}' "$URL/imds/$ID-a1/latest/meta-data/spot/instance-action")
check "metadata without a live instance is 404" test "$code" = 404
code=$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer nope.nope' "$URL/v1/agent/job")
check "agent API refuses unknown tokens" test "$code" = 401

# Cancel: a running job checkpoints, then its instance is released.
expect_exit 0 "submit a second job" "$EBB" --state-dir "$S" submit "$TMP/job.yaml"
ID2=$OUT
for _ in $(seq 1 100); do
    "$EBB" --state-dir "$S" job show "$ID2" | grep -q "state:       running" && break
    sleep 0.05
done
expect_exit 0 "cancel" "$EBB" --state-dir "$S" cancel "$ID2"
for _ in $(seq 1 100); do
    state=$("$EBB" --state-dir "$S" job show "$ID2" --json |
            python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])')
    [ "$state" = cancelled ] && break
    sleep 0.05
done
check "cancelled" test "$state" = cancelled
expect_exit 1 "cancel twice" "$EBB" --state-dir "$S" cancel "$ID2"
check "says it has ended" contains "$ERR" "already ended"
expect_exit 1 "cancel unknown" "$EBB" --state-dir "$S" cancel nosuchjob
check "says no such job" contains "$ERR" "no job nosuchjob"

# The host check: a host whose GPU runs on a PCIe x1 link is refused,
# released, its offer left out, and the job chooses again.
cat >"$TMP/x1.yaml" <<YAML
name: host-check
run: [python3, train.py, --host-pcie-x1]
work: 2h
resources: {instance_types: [p3.2xlarge, p3.8xlarge]}
market: spot
YAML
expect_exit 0 "submit a job that lands on x1 hosts" "$EBB" --state-dir "$S" submit "$TMP/x1.yaml"
ID3=$OUT
refused=0
for _ in $(seq 1 200); do
    refused=$("$EBB" --state-dir "$S" job show "$ID3" --json |
              python3 -c 'import json,sys; d=json.load(sys.stdin); print(sum("host refused" in e["reason"] for e in d["events"]))')
    [ "$refused" -ge 2 ] && break
    sleep 0.1
done
check "both hosts were refused" test "$refused" -ge 2
expect_exit 0 "job show of the refused job" "$EBB" --state-dir "$S" job show "$ID3" --json
check "the refusal says why" contains "$OUT" "the host runs a GPU on a PCIe x1 link (at least x8 needed)"
check "it chose another instance type after the refusal" \
    test "$(json_get "$OUT" 'sorted(set(i["instance_type"] for i in d["instances"]))')" = "['p3.2xlarge', 'p3.8xlarge']"
check "no refused host is kept" test "$(json_get "$OUT" 'all(i["state"] in ("terminated", "failed") for i in d["instances"])')" = True
check "the job waits for a better host" test "$(json_get "$OUT" 'd["state"]')" = waiting
check "the refusal is logged" grep -q "refusing host .*PCIe x1" "$S.log"
expect_exit 0 "cancel the waiting job" "$EBB" --state-dir "$S" cancel "$ID3"

# Several requests on one connection are answered in request order, even
# when a later one is ready first: a submit's answer waits for its commit,
# a price history is read off the loop, status and a bad line are at once.
PIPE=$(python3 - "$S/ebb.sock" "$TMP/x1.yaml" <<'PY'
import json, socket, sys
c = socket.socket(socket.AF_UNIX)
c.connect(sys.argv[1])
spec = open(sys.argv[2]).read().replace("host-check", "pipelined")
reqs = [{"id": 1, "method": "submit", "params": {"file": "p.yaml", "yaml": spec}},
        {"id": 2, "method": "prices", "params": {"history": True}},
        {"id": 3, "method": "status"}]
c.sendall(b"".join(json.dumps(r).encode() + b"\n" for r in reqs) + b"not json\n")
c.shutdown(socket.SHUT_WR)
f = c.makefile()
answers = [json.loads(line) for line in f]
print(json.dumps({"ids": [a.get("id") for a in answers],
                  "job": answers[0]["result"]["id"],
                  "errors": [a["error"]["code"] for a in answers if "error" in a]}))
PY
)
check "pipelined answers come in request order" \
    test "$(json_get "$PIPE" 'd["ids"]')" = "[1, 2, 3, None]"
check "only the bad line failed" test "$(json_get "$PIPE" 'd["errors"]')" = "['bad_request']"
expect_exit 0 "the pipelined submit is stored" "$EBB" --state-dir "$S" job show "$(json_get "$PIPE" 'd["job"]')" --json
expect_exit 0 "cancel the pipelined job" "$EBB" --state-dir "$S" cancel "$(json_get "$PIPE" 'd["job"]')"

stop_daemon TERM
check "ebbd stops cleanly" test "$DAEMON_EXIT" = 0
finish
