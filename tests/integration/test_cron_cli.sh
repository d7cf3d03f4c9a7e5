#!/usr/bin/env bash
# ebb cron next: fire times computed in the CLI (no daemon), their format,
# time zones, and the exit codes and messages for bad input.
. "$(dirname "$0")/lib.sh"

# No daemon anywhere: the command must not need one.
export EBB_STATE_DIR="$TMP/no-daemon"

expect_exit 0 "ebb cron --help" "$EBB" cron --help
check "help shows usage" contains "$OUT" "Usage: ebb cron next 'EXPR'"
expect_exit 0 "ebb --help lists cron" "$EBB" --help
check "cron is listed" contains "$OUT" "cron"
expect_exit 2 "ebb cron alone is a usage error" "$EBB" cron
check "and shows the usage" contains "$ERR" "Usage: ebb cron next"

# --- fire times -------------------------------------------------------------
expect_exit 0 "next 3 of */20 from a time" \
    "$EBB" cron next '*/20 * * * *' --from 2026-12-01T10:05:00Z --count 3
check "one UTC time per line, strictly after --from" \
    test "$OUT" = "2026-12-01T10:20:00Z
2026-12-01T10:40:00Z
2026-12-01T11:00:00Z"

expect_exit 0 "default count is 5" "$EBB" cron next @hourly --from 2026-12-01T00:00:00Z
check "five lines" test "$(printf '%s\n' "$OUT" | wc -l)" -eq 5

expect_exit 0 "default --from is now" "$EBB" cron next '* * * * *' --count 1
now=$(date -u +%s)
got=$(python3 -c "import datetime,sys; print(int(datetime.datetime.fromisoformat(sys.argv[1].replace('Z','+00:00')).timestamp()))" "$OUT")
check "the next minute after now" test $((got - now)) -gt -1 -a $((got - now)) -le 61

# 01:30 in Shanghai (UTC+8) is 17:30 UTC the day before.
expect_exit 0 "--tz Asia/Shanghai" \
    "$EBB" cron next '30 1 * * *' --tz Asia/Shanghai --from 2026-12-01T00:00:00Z --count 2
check "local 01:30 printed in UTC" test "$OUT" = "2026-12-01T17:30:00Z
2026-12-02T17:30:00Z"

# New York skips 02:00-02:59 on 2026-03-08: a 02:30 job runs at 03:00 EDT.
expect_exit 0 "--tz America/New_York across the spring gap" \
    "$EBB" cron next '30 2 * * *' --tz America/New_York --from 2026-03-07T00:00:00Z --count 3
check "the skipped 02:30 fires at the jump" test "$OUT" = "2026-03-07T07:30:00Z
2026-03-08T07:00:00Z
2026-03-09T06:30:00Z"

# OR of the day fields when both are restricted; AND when one starts with *.
expect_exit 0 "day of month or day of week" \
    "$EBB" cron next '0 0 13 * FRI' --from 2026-02-01T00:00:00Z --count 3
check "the 6th (Friday), 13th, and 13th (also a Friday)" test "$OUT" = "2026-02-06T00:00:00Z
2026-02-13T00:00:00Z
2026-02-20T00:00:00Z"
expect_exit 0 "*/2 counts as unrestricted" \
    "$EBB" cron next '0 0 */2 * MON' --from 2024-01-01T00:00:00Z --count 2
check "odd-numbered Mondays only (Vixie)" test "$OUT" = "2024-01-15T00:00:00Z
2024-01-29T00:00:00Z"

expect_exit 0 "fire times end at the year 9999" \
    "$EBB" cron next '*/5 * * * *' --from 9999-12-31T23:50:00Z --count 3
check "the last one is printed" test "$OUT" = "9999-12-31T23:55:00Z"
check "and the end is said" contains "$ERR" "no more fire times before the year 10000"

# --- bad input: exit 2, the message names the bad field ---------------------
expect_exit 2 "hour out of range" "$EBB" cron next '0 24 * * *'
check "names field 2 and the range" contains "$ERR" 'invalid cron expression: field 2 (hour) "24": 24 is out of range 0-23'
check "and underlines it" contains "$ERR" "
  0 24 * * *
    ^^"
check "prints nothing on stdout" test -z "$OUT"

expect_exit 2 "unknown day name" "$EBB" cron next '0 0 * * MON-FRY'
check "names field 5" contains "$ERR" 'field 5 (day of week) "MON-FRY": unknown name "FRY" (SUN-SAT or 0-7)'
expect_exit 2 "zero step" "$EBB" cron next '*/0 * * * *'
check "says the step range" contains "$ERR" "step 0 is out of range 1-59"
expect_exit 2 "six fields" "$EBB" cron next '0 0 0 * * *'
check "says there is no seconds field" contains "$ERR" "ebb has no seconds field"
expect_exit 2 "unknown macro" "$EBB" cron next '@reboot'
check "lists the macros" contains "$ERR" "unknown macro \"@reboot\" (known: @yearly"
expect_exit 2 "an expression that never fires" "$EBB" cron next '0 0 30 2 *'
check "says so" contains "$ERR" '"0 0 30 2 *" never fires'
expect_exit 2 "unknown zone" "$EBB" cron next @daily --tz Asia/Shangai
check "names the zone and tzdata" contains "$ERR" 'unknown time zone "Asia/Shangai"'
check "suggests a real name" contains "$ERR" "Asia/Shanghai"
expect_exit 2 "a zone name that is a path" "$EBB" cron next @daily --tz ../../etc/passwd
check "is refused as a name" contains "$ERR" "is not a time zone name"
expect_exit 2 "bad --from" "$EBB" cron next @daily --from tomorrow
check "says --from" contains "$ERR" '--from: "tomorrow" is not a time'
expect_exit 2 "bad --count" "$EBB" cron next @daily --count many
check "says --count" contains "$ERR" '--count: "many" is not a number from 1 to 10000'
expect_exit 2 "unquoted fields" "$EBB" cron next 0 0 '*' '*' '*'
check "asks for quotes" contains "$ERR" "give one expression, quoted"
expect_exit 2 "unknown subcommand" "$EBB" cron prev @daily
check "says which" contains "$ERR" 'unknown subcommand "prev"'

finish
