#!/usr/bin/env bash
# The agent channel (docs/security.md, "The agent channel" and "What an
# instance can learn"): agents reach ebbd over TLS and verify its
# certificate by the pin in their boot data, failing closed on a wrong
# one; a plain request to the TLS listener gets nothing; ebbd refuses a
# plain listener others can reach unless agent_api.insecure says so, and
# a plain request that reaches a loopback listener from another address;
# the enrolment token in an instance's boot data works once; the
# metadata endpoint's session needs the instance's own token, not the
# launch token anyone may read.
. "$(dirname "$0")/lib.sh"

# pin_of CERT: curl's sha256// pin of a PEM certificate's public key.
pin_of() {
    printf 'sha256//%s' "$(openssl x509 -in "$1" -pubkey -noout |
        openssl pkey -pubin -outform DER | openssl dgst -sha256 -binary | base64)"
}

# agent_url STATE: the URL ebbd's log says agents reach it at.
agent_url() {
    sed -n 's/.*agents reach ebbd at \(http[^ ]*\).*/\1/p' "$1.log" | tail -n 1
}

# wait_for TRIES COMMAND...: retries COMMAND every 0.1 s.
wait_for() {
    local tries=$1; shift
    for _ in $(seq 1 "$tries"); do "$@" && return 0; sleep 0.1; done
    return 1
}

# An address of this host that is not loopback, to be "another host" from:
# one the host has, else one put on lo for the test.
OTHER_IP=$(ip -4 -o addr show scope global 2>/dev/null | awk '{print $4}' | cut -d/ -f1 | head -n 1)
ADDED_IP=""
if [ -z "$OTHER_IP" ] && ip addr add 198.51.100.77/32 dev lo 2>/dev/null; then
    OTHER_IP=198.51.100.77
    ADDED_IP=$OTHER_IP
fi
trap 'cleanup; [ -n "$ADDED_IP" ] && ip addr del "$ADDED_IP/32" dev lo' EXIT

# ---- ebbd over TLS, its own certificate, a real agent with the pin ------

# The local provider's agent is a wrapper that keeps what it was given
# (its argv and the token in its environment, what a cloud instance's
# boot data holds) and runs the real ebb-agent.
CAP="$TMP/captured"
mkdir -p "$CAP"
cat >"$TMP/agent-wrapper" <<SH
#!/bin/sh
printf '%s\n' "\$@" >"$CAP/args"
printf '%s' "\$EBB_AGENT_TOKEN" >"$CAP/token"
exec "$EBB_AGENT" "\$@"
SH
chmod 755 "$TMP/agent-wrapper"

S="$TMP/tls"
cat >"$TMP/tls.yaml" <<YAML
providers:
  sim:
    prices: $EBB_SOURCE_ROOT/tests/data/engine/prices_flat.csv
  local:
    agent: $TMP/agent-wrapper
run_on: {sim: local}
clock: {start: 2020-01-01T06:00:00Z, speed: 1200}
agent_api: {listen: 127.0.0.1:0, heartbeat: 1s, tls: "on"}
YAML
cat >"$TMP/job.yaml" <<YAML
name: over-tls
run: [sh, -c, "echo hello over tls; sleep 4"]
work: 1h
resources: {instance_types: [p3.2xlarge]}
market: spot
YAML
check "ebbd starts with agent_api.tls on" start_daemon "$S" --config "$TMP/tls.yaml"
URL=$(agent_url "$S")
check "agents are told an https URL" contains "$URL" "https://127.0.0.1:"
check "ebbd made its key, mode 0600" test "$(stat -c %a "$S/agent-tls.key" 2>/dev/null)" = 600
PIN=$(pin_of "$S/agent-tls.crt")
check "ebbd logs the pin agents get" grep -qF "$PIN" "$S.log"

expect_exit 0 "submit" "$EBB" --state-dir "$S" submit "$TMP/job.yaml"
ID=$OUT
check "the agent was started" wait_for 300 test -s "$CAP/token"
check "the agent is given the certificate's pin" grep -qxF "$PIN" "$CAP/args"
check "its --ebbd URL is https" grep -qx "https://127.0.0.1:[0-9]*" "$CAP/args"
ENROL=$(cat "$CAP/token" 2>/dev/null)
check "its token is an enrolment token" contains "$ENROL" "enrol:$ID-a1."
check "the agent enrolled over TLS" wait_for 300 grep -q "job $ID: its agent enrolled" "$S.log"

# The boot data's token, used again while the instance lives: refused,
# and logged.
code=$(curl -s -o "$TMP/replay" -w '%{http_code}' --pinnedpubkey "$PIN" -k -X POST \
    -H "Authorization: Bearer $ENROL" "$URL/v1/enrol")
check "a second enrolment is refused (401)" test "$code" = 401
check "the refusal says it was used" grep -q "used already" "$TMP/replay"
check "ebbd logs the second use" grep -q "refused an enrolment: $ID-a1: its enrolment token was used already" "$S.log"
check "the enrolment token is no bearer token" test "$(curl -s -o /dev/null -w '%{http_code}' \
    --pinnedpubkey "$PIN" -k -H "Authorization: Bearer ${ENROL#enrol:}" "$URL/v1/agent/job")" = 401

# The metadata session: the launch token in the path is public; alone it
# gets nothing.
code=$(curl -s -o /dev/null -w '%{http_code}' --pinnedpubkey "$PIN" -k -X PUT \
    -H 'X-aws-ec2-metadata-token-ttl-seconds: 60' "$URL/imds/$ID-a1/latest/api/token")
check "a metadata session with only the launch token is refused (401)" test "$code" = 401
code=$(curl -s -o /dev/null -w '%{http_code}' --pinnedpubkey "$PIN" -k -X PUT \
    -H 'X-aws-ec2-metadata-token-ttl-seconds: 60' -H "Authorization: Bearer ${ENROL#enrol:}" \
    "$URL/imds/$ID-a1/latest/api/token")
check "... and with the spent enrolment secret too" test "$code" = 401

# Plain HTTP to the TLS listener: no answer, and ebbd lives on.
curl -s -o "$TMP/plain" --max-time 5 "http://${URL#https://}/v1/agent/job" 2>/dev/null
rc=$?
cut_off() { { [ "$rc" = 52 ] || [ "$rc" = 56 ]; } && [ ! -s "$TMP/plain" ]; }
check "plain HTTP to the TLS listener is cut off unanswered (curl 52/56)" cut_off
alive() { "$EBB" --state-dir "$S" status >/dev/null 2>&1; }
check "ebbd lives on" alive

state=""
for _ in $(seq 1 600); do
    state=$("$EBB" --state-dir "$S" job show "$ID" --json 2>/dev/null |
            python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])')
    case "$state" in succeeded|failed|cancelled|"") break ;; esac
    sleep 0.1
done
check "the job ran to success through the pinned channel" test "$state" = succeeded
expect_exit 0 "logs" "$EBB" --state-dir "$S" logs "$ID"
check "its output came over TLS" contains "$OUT" "hello over tls"
AGENT_LOG="$S/plugins/local/$ID-a1.agent.log"
check "the agent logged its run" grep -q "enrolled with ebbd" "$AGENT_LOG"
check "the agent's own metadata session was granted" \
    test "$(grep -c "metadata endpoint: refused a session for $ID" "$S.log")" = 2 -a \
    "$(grep -c "metadata endpoint" "$AGENT_LOG")" = 0

# A real ebb-agent with a wrong pin fails closed: it never talks to this
# ebbd, says why, and gives up.
BEFORE=$(grep -c "refused an enrolment" "$S.log")
WRONG="sha256//AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="
EBB_AGENT_TOKEN="enrol:$ID-a9.0000" expect_exit 5 "an agent with a wrong pin gives up (exit 5)" \
    "$EBB_AGENT" --ebbd "$URL" --ebbd-pin "$WRONG" --metadata-kind none --exit-wait 2s
check "it says the key does not match its pin" contains "$ERR" "pinned public key"
check "ebbd never heard from it" test "$(grep -c "refused an enrolment" "$S.log")" = "$BEFORE"
# The right pin reaches ebbd (which refuses this made-up token).
EBB_AGENT_TOKEN="enrol:$ID-a9.0000" expect_exit 3 "with the right pin it reaches ebbd" \
    "$EBB_AGENT" --ebbd "$URL" --ebbd-pin "$PIN" --metadata-kind none --exit-wait 5s
check "ebbd heard it" test "$(grep -c "refused an enrolment" "$S.log")" -gt "$BEFORE"
EBB_AGENT_TOKEN="enrol:x.y" expect_exit 2 "a pin with an http:// URL is refused" \
    "$EBB_AGENT" --ebbd "http://${URL#https://}" --ebbd-pin "$PIN"
check "... saying it needs https" contains "$ERR" "needs an https:// --ebbd URL"

# Restarted, ebbd keeps its key: the pin agents hold stays good.
stop_daemon TERM
check "ebbd starts again" start_daemon "$S" --config "$TMP/tls.yaml"
check "the same key, the same pin" test "$(pin_of "$S/agent-tls.crt")" = "$PIN"
stop_daemon TERM

# An enrolment token that was not used in time is refused too.
SX="$TMP/expiry"
sed 's/tls: "on"}/tls: "on", enrol_ttl: 1ms}/' "$TMP/tls.yaml" >"$TMP/expiry.yaml"
rm -f "$CAP/token"
check "ebbd starts with enrol_ttl 1ms" start_daemon "$SX" --config "$TMP/expiry.yaml"
expect_exit 0 "submit" "$EBB" --state-dir "$SX" submit "$TMP/job.yaml"
IDX=$OUT
check "an expired enrolment token is refused" \
    wait_for 300 grep -q "refused an enrolment: $IDX-a1: its enrolment token expired" "$SX.log"
check "the agent says so" wait_for 100 grep -q "ebbd refused the enrolment" \
    "$SX/plugins/local/$IDX-a1.agent.log"
stop_daemon TERM

# ---- a configured certificate that chains to a CA ---------------------

# make_ca NAME: a CA certificate and key, NAME.crt and NAME.key.
make_ca() {
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
        -subj "/CN=$1" -keyout "$TMP/$1.key" -out "$TMP/$1.crt" 2>/dev/null
}
make_ca test-ca && make_ca other-ca
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=127.0.0.1 \
    -keyout "$TMP/server.key" -out "$TMP/server.csr" 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\n' >"$TMP/san.ext"
openssl x509 -req -in "$TMP/server.csr" -CA "$TMP/test-ca.crt" -CAkey "$TMP/test-ca.key" \
    -CAcreateserial -days 2 -extfile "$TMP/san.ext" -out "$TMP/server.crt" 2>/dev/null
chmod 600 "$TMP/server.key"
SC="$TMP/ca"
cat >"$TMP/ca.yaml" <<YAML
providers:
  sim:
    prices: $EBB_SOURCE_ROOT/tests/data/engine/prices_flat.csv
  local:
    agent: $TMP/agent-wrapper
run_on: {sim: local}
clock: {start: 2020-01-01T06:00:00Z, speed: 1200}
agent_api:
  listen: 127.0.0.1:0
  tls_cert: $TMP/server.crt
  tls_key: $TMP/server.key
  tls_ca: $TMP/test-ca.crt
YAML
check "ebbd starts with a CA-signed certificate" start_daemon "$SC" --config "$TMP/ca.yaml"
check "agents verify it by the CA" grep -q "by the CA in $TMP/test-ca.crt" "$SC.log"
check "ebbd made no certificate of its own" test ! -e "$SC/agent-tls.key"
URLC=$(agent_url "$SC")
EBB_AGENT_TOKEN="enrol:j-x-a1.0000" expect_exit 3 "an agent with the CA reaches ebbd (which refuses the token)" \
    "$EBB_AGENT" --ebbd "$URLC" --ebbd-ca "$TMP/test-ca.crt" --metadata-kind none --exit-wait 5s
EBB_AGENT_TOKEN="enrol:j-x-a1.0000" expect_exit 5 "an agent with another CA gives up (exit 5)" \
    "$EBB_AGENT" --ebbd "$URLC" --ebbd-ca "$TMP/other-ca.crt" --metadata-kind none --exit-wait 2s
check "... saying the certificate did not verify" contains "$ERR" "SSL certificate problem"
check "ebbd heard only the first" test "$(grep -c "refused an enrolment" "$SC.log")" = 1
rm -f "$CAP/token"
expect_exit 0 "submit" "$EBB" --state-dir "$SC" submit "$TMP/job.yaml"
IDC=$OUT
check "a local agent is started" wait_for 300 test -s "$CAP/token"
check "... told the CA, in a file" grep -qx -- "--ebbd-ca" "$CAP/args"
check "... which holds the CA" cmp -s "$SC/plugins/local/ebbd-ca.pem" "$TMP/test-ca.crt"
check "... and it enrols" wait_for 300 grep -q "job $IDC: its agent enrolled" "$SC.log"
stop_daemon TERM

# ---- what ebbd refuses to start with, and TLS by default off loopback ----

S2="$TMP/open"
printf 'agent_api: {listen: "0.0.0.0:0", tls: "off"}\n' >"$TMP/open.yaml"
expect_exit 2 "a plain listener on all interfaces is refused" \
    "$EBBD" --state-dir "$S2" --config "$TMP/open.yaml"
check "the error names agent_api.insecure" contains "$ERR" "agent_api.insecure: true"
check "nothing was created" test ! -e "$S2"

printf 'agent_api: {listen: "0.0.0.0:0"}\n' >"$TMP/default.yaml"
check "ebbd starts on all interfaces by default" start_daemon "$S2" --config "$TMP/default.yaml"
check "... with TLS" contains "$(agent_url "$S2")" "https://"
stop_daemon TERM

# ---- plain HTTP only from this host -----------------------------------

S3="$TMP/plain-lo"
printf 'agent_api: {listen: "127.0.0.1:0"}\n' >"$TMP/lo.yaml"
check "a plain loopback listener starts" start_daemon "$S3" --config "$TMP/lo.yaml"
URL3=$(agent_url "$S3")
check "... with an http URL" contains "$URL3" "http://127.0.0.1:"
code=$(curl -s -o /dev/null -w '%{http_code}' "$URL3/v1/agent/job")
check "a local plain request is answered (401: no token)" test "$code" = 401
if [ -n "$OTHER_IP" ]; then
    code=$(curl -s -o "$TMP/far" -w '%{http_code}' --interface "$OTHER_IP" "$URL3/v1/agent/job")
    check "a plain request from $OTHER_IP is refused (403)" test "$code" = 403
    check "ebbd logs it" grep -q "refused plain HTTP GET /v1/agent/job from another host" "$S3.log"
else
    not_ok "a non-loopback address to test from" "the host has none and ip addr add failed"
fi
stop_daemon TERM

S4="$TMP/insecure"
printf 'agent_api: {listen: "0.0.0.0:0", tls: "off", insecure: true}\n' >"$TMP/insecure.yaml"
check "agent_api.insecure: true allows a plain listener on all interfaces" \
    start_daemon "$S4" --config "$TMP/insecure.yaml"
URL4=$(agent_url "$S4")
check "... with an http URL" contains "$URL4" "http://0.0.0.0:"
if [ -n "$OTHER_IP" ]; then
    code=$(curl -s -o /dev/null -w '%{http_code}' "http://$OTHER_IP:${URL4##*:}/v1/agent/job")
    check "... and plain requests from $OTHER_IP (401: no token)" test "$code" = 401
fi
stop_daemon TERM

finish
