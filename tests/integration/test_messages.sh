#!/usr/bin/env bash
# What a user reads (#16, "Messages and output a user reads"): errors name
# the line they are about, messages say what is wrong rather than something
# near it, and the tables use one form for times and one rule for amounts.
. "$(dirname "$0")/lib.sh"

ROOT=${EBB_SOURCE_ROOT:?EBB_SOURCE_ROOT is set by meson}

# ---- line numbers --------------------------------------------------------

printf 'log_level: info\n\ndefault_policy: nosuch\n' >"$TMP/policy.yaml"
expect_exit 2 "an unknown default_policy is bad configuration" \
    "$EBBD" --config "$TMP/policy.yaml" --state-dir "$TMP/s1"
check "default_policy refused at its line" contains "$ERR" "$TMP/policy.yaml:3: default_policy: \"nosuch\" is not installed"
printf 'log_level: info\napi:\n  socket_group: no-such-group-ebb\n' >"$TMP/group.yaml"
expect_exit 2 "an unknown api.socket_group is bad configuration" \
    "$EBBD" --config "$TMP/group.yaml" --state-dir "$TMP/s2"
check "socket_group refused at its line" contains "$ERR" "$TMP/group.yaml:3: api.socket_group: no group named \"no-such-group-ebb\""
check "nothing made for a bad socket_group" test ! -e "$TMP/s2"

S="$TMP/state"
check "ebbd starts, clock x720" start_daemon "$S" --clock-speed 720
E=("$EBB" --state-dir "$S")
printf 'name: typo\nrun: [true]\nwork: 1h\npolicy: nosuch\n' >"$TMP/policy-job.yaml"
expect_exit 2 "a job naming an unknown policy" "${E[@]}" submit "$TMP/policy-job.yaml"
check "policy: refused at line 4" contains "$ERR" "$TMP/policy-job.yaml:4: typo: no policy named \"nosuch\""
printf 'name: typo\nrun: [true]\nwork: 1h\nteam: nosuch\n' >"$TMP/team-job.yaml"
expect_exit 2 "a job naming an unknown team" "${E[@]}" submit "$TMP/team-job.yaml"
check "team: refused at line 4" contains "$ERR" "$TMP/team-job.yaml:4: team \"nosuch\" is not in ebb.yaml"

printf 'name: typo\ncron: "0 1 * * *"\nwindow: 6h\njob:\n  run: [true]\n  work: 1h\n  policy: nosuch\n' >"$TMP/policy-schedule.yaml"
expect_exit 2 "a schedule whose job names an unknown policy" "${E[@]}" schedule add "$TMP/policy-schedule.yaml"
check "job.policy: refused at line 7" contains "$ERR" "$TMP/policy-schedule.yaml:7: job.policy: no policy named \"nosuch\""
printf 'name: typo\ncron: "0 1 * * *"\nwindow: 6h\njob:\n  run: [true]\n  work: 1h\n  team: nosuch\n' >"$TMP/team-schedule.yaml"
expect_exit 2 "a schedule whose job names an unknown team" "${E[@]}" schedule add "$TMP/team-schedule.yaml"
check "job.team: refused at line 7" contains "$ERR" "$TMP/team-schedule.yaml:7: team \"nosuch\" is not in ebb.yaml"

# ---- texts that said something else ------------------------------------

expect_exit 2 "ebb --state-dir without a value" "$EBB" --state-dir
check "--state-dir: says it needs a directory" contains "$ERR" "--state-dir needs a directory"
check "--state-dir: not an unknown option" test "${ERR#*unknown option}" = "$ERR"
expect_exit 0 "ebb prices --type nosuch" "${E[@]}" prices --type nosuch
check "no match is not 'no provider configured'" contains "$OUT" "no prices match --provider, --type and --zone"
expect_exit 2 "backtest --policy nosuch" "$EBB" backtest \
    --prices "$ROOT/data/traces/aws_spot_gpu_p2p3_6regions_2019-12-20_2020-02-29.csv" \
    --catalog "$ROOT/data/catalog.csv" --workload "$ROOT/examples/jobs/workload-small.yaml" \
    --policy nosuch
check "backtest names --policy and lists the installed ones" contains "$ERR" "--policy: no policy named \"nosuch\" is installed (installed: deadline, greedy"
check "backtest does not speak of default_policy" test "${ERR#*default_policy}" = "$ERR"

# ---- alignment and units ----------------------------------------------

expect_exit 0 "ebb --help" "$EBB" --help
# Each command's summary starts in one column, whatever the name's length.
check "command summaries line up" python3 -c '
import re, sys
rows = [l for l in sys.argv[1].splitlines() if re.match(r"  [a-z]+  +\S", l)]
cols = {re.match(r"  [a-z]+ +", l).end() for l in rows}
sys.exit(0 if len(rows) > 10 and len(cols) == 1 else 1)' "$OUT"
expect_exit 0 "ebb status" "${E[@]}" status
check "labels and values apart" contains "$OUT" "default policy:  renewal"
UP=$(printf '%s\n' "$OUT" | sed -n 's/^uptime: *//p')
check "uptime is wall time (seconds, not x720 market time)" python3 -c '
import re, sys
m = re.fullmatch(r"(\d+)s", sys.argv[1])
sys.exit(0 if m and int(m.group(1)) < 120 else 1)' "$UP"
check "market time shown apart" contains "$OUT" "market clock:"

ID=$("${E[@]}" submit "$ROOT/examples/jobs/demo-train.yaml")
check "demo job submitted" test -n "$ID"
# Shown while it has run and is on an instance (between two of the demo
# pool's preemptions, it may for a moment be on none).
SHOW=""
for _ in $(seq 1 100); do
    SHOW=$("${E[@]}" job show "$ID" 2>&1)
    contains "$SHOW" "running on:" && contains "$SHOW" " running " && break
    sleep 0.1
done
check "ebb job show of the job running on an instance" contains "$SHOW" "running on:"
check "times in one form: whole seconds" python3 -c '
import re, sys
t = sys.argv[1]
sys.exit(1 if re.search(r"\d\d:\d\d:\d\d\.\d+Z", t) or not re.search(r"\d\d:\d\d:\d\dZ", t) else 0)' "$SHOW"
check "a launch reason's price names its currency" python3 -c '
import re, sys
t = sys.argv[1]
sys.exit(1 if re.search(r"\d/h", t) or not re.search(r"at \d+\.\d{4} USD/h", t) else 0)' "$SHOW"
check "a running job shows what its instance has cost so far" python3 -c '
import re, sys
sys.exit(0 if re.search(r"accruing: +\d+\.\d\d USD on this instance so far", sys.argv[1]) else 1)' "$SHOW"
check "amounts in job show with two decimals" python3 -c '
import re, sys
amounts = re.findall(r"(\d+\.\d+) USD(?!/h)", sys.argv[1])
sys.exit(0 if amounts and all(len(a.split(".")[1]) == 2 for a in amounts) else 1)' "$SHOW"
expect_exit 0 "ebb prices" "${E[@]}" prices --provider aws
check "prices per hour with four decimals each" python3 -c '
import sys
rows = sys.argv[1].splitlines()[1:]
prices = [r.split()[5] for r in rows]
sys.exit(0 if prices and all(len(p.split(".")[1]) == 4 for p in prices) else 1)' "$OUT"
expect_exit 0 "ebb jobs" "${E[@]}" jobs --all
check "jobs: no milliseconds either" python3 -c '
import re, sys
sys.exit(1 if re.search(r"\d\d\.\d+Z", sys.argv[1]) else 0)' "$OUT"

# A log file that cannot be opened is named as such, not as an agent that
# cannot start: the local provider's directory made read-only.
LOCAL="$S/plugins/local"
mkdir -p "$LOCAL"
"${E[@]}" cancel "$ID" >/dev/null 2>&1
if mount -t tmpfs -o ro tmpfs "$LOCAL" 2>"$TMP/mount.err"; then
    ID2=$("${E[@]}" submit "$ROOT/examples/jobs/demo-train.yaml")
    for _ in $(seq 1 100); do
        grep -q "agent's log" "$S.log" && break
        sleep 0.1
    done
    "${E[@]}" cancel "$ID2" >/dev/null 2>&1
    umount "$LOCAL"
    check "a log that cannot be opened is named" grep -q "cannot open the agent's log $LOCAL/$ID2-a1.agent.log: Read-only file system" "$S.log"
    check "and not reported as an agent that cannot start" test "$(grep -c 'cannot start .*ebb-agent' "$S.log")" = 0
else
    not_ok "mount a read-only tmpfs (the test runs as root)" "$(cat "$TMP/mount.err")"
fi

stop_daemon TERM
check "ebbd stops cleanly" test "$DAEMON_EXIT" -eq 0
finish
