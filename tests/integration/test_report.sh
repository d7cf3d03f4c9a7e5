#!/usr/bin/env bash
# ebb report against a running ebbd on a prepared state directory: a week
# of prices, jobs, instances, ledger rows and events (report_fixture.py,
# which also computes the figures the report must show), then the table,
# JSON, CSV and SVG outputs, the groupings, and bad input.
. "$(dirname "$0")/lib.sh"

expect_exit 0 "ebb report --help" "$EBB" report --help
check "help shows usage" contains "$OUT" "Usage: ebb report"

# Bad input is named before ebbd is asked: exit 2, even without a daemon.
S="$TMP/state"
expect_exit 2 "bad --since" "$EBB" --state-dir "$S" report --since 2026-13-01
check "bad --since explained" contains "$ERR" '--since "2026-13-01": not a duration back from now'
expect_exit 2 "bad --until" "$EBB" --state-dir "$S" report --until 30d
check "bad --until explained" contains "$ERR" '--until "30d": not a date'
expect_exit 2 "bad --by" "$EBB" --state-dir "$S" report --by week
check "bad --by explained" contains "$ERR" '--by "week": not one of job, team'
expect_exit 2 "--json with --csv" "$EBB" --state-dir "$S" report --json --csv

cat >"$TMP/ebb.yaml" <<'EOF'
currency_rates:
  CNY: 0.14
plans:
  reserved-p3:
    provider: aws
    instance_type: p3.2xlarge
    price: 40 USD
    period: 1d
EOF
check "ebbd starts" start_daemon "$S" --config "$TMP/ebb.yaml"
WANT=$(python3 "$(dirname "$0")/report_fixture.py" "$S/ebb.db")
check "fixture written" test -n "$WANT"
W="--since 2026-10-01 --until 2026-10-08"

# shellcheck disable=SC2086
expect_exit 0 "ebb report --json" "$EBB" --state-dir "$S" report $W --json
J=$OUT
for f in spend rows preemptions restart_ms checkpoint_ms lost_ms on_demand_basis; do
    key=$f; case $f in spend|on_demand_basis) key=${f}_micros ;; esac
    check "total $f matches the ledger" test "$(json_get "$J" "d['total']['$key']")" = "$(json_get "$WANT" "d['$f']")"
done
check "the on-demand reference is the same work: the time lost to preemptions and restarts left out" \
    test "$(json_get "$J" "d['total']['on_demand_micros']")" = "$(json_get "$WANT" "d['on_demand']")"
check "ledger currency sum is the spend" \
    test "$(json_get "$J" "d['ledger'][0]['amount_micros']")" = "$(json_get "$WANT" "d['spend']")"
check "savings are on-demand minus basis" \
    test "$(json_get "$J" "d['total']['savings_micros'] == d['total']['on_demand_micros'] - d['total']['on_demand_basis_micros']")" = True
check "percentages are written as rounded, two decimals at most" python3 -c '
import re, sys
t = sys.argv[1]
pcts = re.findall(r"\"savings(?:_vs_spot_at_once)?_pct\": ([^,}]+)", t)
sys.exit(0 if pcts and all(re.fullmatch(r"null|-?\d+(\.\d{1,2})?", p.strip()) for p in pcts) else 1)' "$J"
check "spot at once priced" test "$(json_get "$J" "d['total']['spot_at_once_micros'] > 0")" = True
for f in fee_storage fee_egress; do
    check "total $f is the ledger's $f rows" test "$(json_get "$J" "d['total']['${f}_micros']")" = "$(json_get "$WANT" "d['$f']")"
done
check "fees are storage plus egress" test "$(json_get "$J" "d['total']['fees_micros']")" = "$(json_get "$WANT" "d['fee_storage'] + d['fee_egress']")"

# shellcheck disable=SC2086
expect_exit 0 "ebb report --by team --json" "$EBB" --state-dir "$S" report $W --by team --json
for team in ml cv; do
    check "team $team spend" test "$(json_get "$OUT" "[g['spend_micros'] for g in d['groups'] if g['key'] == '$team'][0]")" = "$(json_get "$WANT" "d['teams']['$team']")"
done
# ml runs 8 instance-days' worth, but not every day: no plan advice;
# nothing is claimed without figures.
check "advice only with figures" test "$(json_get "$OUT" "all(a['spend_micros'] > a['with_plan_micros'] for a in d['advice'])")" = True

for by in job provider instance-type day; do
    # shellcheck disable=SC2086
    expect_exit 0 "ebb report --by $by" "$EBB" --state-dir "$S" report $W --by "$by" --json
    check "--by $by groups add up to the total" test "$(json_get "$OUT" "sum(g['spend_micros'] for g in d['groups']) == d['total']['spend_micros']")" = True
done
check "--by day has one group per day with rows" test "$(json_get "$OUT" "len(d['groups'])")" = 7

# shellcheck disable=SC2086
expect_exit 0 "ebb report table" "$EBB" --state-dir "$S" report $W --by team
check "table has a TOTAL line" contains "$OUT" "TOTAL"
check "table shows the time lost" contains "$(printf '%s' "$OUT" | head -2)" "LOST"
check "table names the teams" contains "$OUT" "ml"
check "table shows the ledger sum, exact to the micro-unit" contains "$OUT" "Ledger: $(json_get "$WANT" "d['rows']") rows, $(json_get "$WANT" "'%d.%06d USD (exact)' % divmod(d['spend'], 1000000)")"

# shellcheck disable=SC2086
expect_exit 0 "ebb report --csv" "$EBB" --state-dir "$S" report $W --by team --csv
check "csv header" contains "$(printf '%s' "$OUT" | head -1)" "group,currency,rows,spend,"
check "csv: header, two teams, total" test "$(printf '%s\n' "$OUT" | wc -l)" -eq 4
check "csv: fee_storage and fee_egress of team ml" python3 -c '
import csv, io, sys
rows = list(csv.DictReader(io.StringIO(sys.argv[1])))
ml = [r for r in rows if r["group"] == "ml"][0]
sys.exit(0 if (ml["fee_storage"], ml["fee_egress"]) == ("4.20", "0.18") else 1)' "$OUT"

# shellcheck disable=SC2086
expect_exit 0 "ebb report in CNY" "$EBB" --state-dir "$S" report $W --currency CNY --json
check "CNY total converted" test "$(json_get "$OUT" "abs(d['total']['spend_micros'] * 0.14 - $(json_get "$WANT" "d['spend']")) < 1 * d['total']['rows']")" = True
# shellcheck disable=SC2086
expect_exit 2 "a currency without a rate" "$EBB" --state-dir "$S" report $W --currency EUR
check "missing rate explained" contains "$ERR" "currency_rates:"
check "the rate to add is EUR's own, no other currency's figure" contains "$ERR" "add EUR under currency_rates: in ebb.yaml, as how many USD one EUR is worth (currency_rates: {EUR: RATE})"
check "no CNY rate suggested for EUR" test "${ERR#*0.14}" = "$ERR"

# The chart renders to a PNG that is not blank.
# shellcheck disable=SC2086
expect_exit 0 "ebb report --svg" "$EBB" --state-dir "$S" report $W --svg "$TMP/chart.svg"
check "svg written" test -s "$TMP/chart.svg"
if command -v rsvg-convert >/dev/null; then
    check "svg renders" rsvg-convert -o "$TMP/chart.png" "$TMP/chart.svg"
    size=$(python3 -c "import struct,sys; b=open(sys.argv[1],'rb').read(24); print(*struct.unpack('>II', b[16:24]))" "$TMP/chart.png")
    check "png is 960 wide and tall enough" test "${size%% *}" -eq 960 -a "${size##* }" -ge 500
    # A blank page of the same size compresses to almost nothing.
    printf '<svg xmlns="http://www.w3.org/2000/svg" width="960" height="%s"><rect width="100%%" height="100%%" fill="#fff"/></svg>' "${size##* }" >"$TMP/blank.svg"
    rsvg-convert -o "$TMP/blank.png" "$TMP/blank.svg"
    check "png is not blank" test "$(stat -c %s "$TMP/chart.png")" -gt $(( 5 * $(stat -c %s "$TMP/blank.png") ))
else
    not_ok "rsvg-convert is installed" "install librsvg2-bin to render the chart"
fi

stop_daemon TERM
check "ebbd stops cleanly" test "$DAEMON_EXIT" -eq 0
finish
