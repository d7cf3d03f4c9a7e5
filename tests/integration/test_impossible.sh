#!/usr/bin/env bash
# Jobs that can never run, and jobs that wait (#16 point 4):
#   - on ebbd's built-in configuration, a job whose resources no offer of
#     any configured provider matches (regions: [nowhere], instance_types:
#     [nosuch.type], a GPU model nobody offers, gpu.memory_gb beyond any
#     GPU, network beyond any type's), or whose budget is in a currency without a rate (5 XYZ), is
#     refused at submit with exit 2 and the reason, and nothing is stored;
#   - a budget below any possible step (0.000001 USD) ends budget_exhausted
#     at once (docs/budgets.md), without a launch;
#   - on a market without spot capacity a spot job waits and says why in
#     `ebb jobs` and `ebb job show`, and ends deadline_missed when its
#     deadline passes;
#   - a job whose currency loses its rate across a restart does not break
#     `ebb budget` for the others: its row says why, theirs add up.
. "$(dirname "$0")/lib.sh"

S="$TMP/state"
check "ebbd starts on its built-in configuration" start_daemon "$S" --clock-speed 720

# The refusal judges the market once every provider has answered a first
# poll: wait for that (ebb providers says how many polls each made).
polled() {
    "$EBB" --state-dir "$S" providers --json 2>/dev/null |
        python3 -c 'import json,sys; sys.exit(0 if all(p["polls"] > 0 for p in json.load(sys.stdin)["providers"]) else 1)'
}
for _ in $(seq 1 100); do polled && break; sleep 0.05; done
check "every provider has polled" polled

# spec NAME LINE: a job spec with one extra line.
spec() {
    printf 'name: %s\nrun: [python3, train.py]\nwork: 1h\n%s\n' "$1" "$2" >"$TMP/$1.yaml"
}
refused() { # NAME LINE WANT
    spec "$1" "$2"
    expect_exit 2 "$1 is refused at submit" "$EBB" --state-dir "$S" submit "$TMP/$1.yaml"
    check "... saying why ($1)" contains "$ERR" "$3"
}
refused region "resources: {regions: [nowhere]}" \
    "region.yaml: resources.regions: no offer of any configured provider matches, so the job could never run (regions offered: "
refused type "resources: {instance_types: [nosuch.type]}" \
    "type.yaml: resources.instance_types: no offer of any configured provider matches, so the job could never run (types offered: "
check "... listing the types there are" contains "$ERR" "p3.2xlarge"
refused gpu "resources: {gpu: {model: H100}}" \
    "gpu.yaml: resources.gpu: no offer of any configured provider matches, so the job could never run (GPU models offered: "
refused gpumem "resources: {gpu: {memory_gb: 100000}}" \
    "gpumem.yaml:4: resources.gpu.memory_gb: 100000 is more than any GPU has (at most 1024 GB per GPU"
refused gpumem-huge "resources: {gpu: {memory_gb: 100000000000}}" \
    "gpumem-huge.yaml:4: resources.gpu.memory_gb:"
refused combo "resources: {instance_types: [p2.xlarge], regions: [eu-west-2]}
market: spot" \
    "combo.yaml: resources: no offer of any configured provider matches all of the job's resources and market together"
refused network "resources: {network: 400Gbps}" \
    "network.yaml: resources.network: 400Gbps: no matching instance type has that much (the catalog's network_gbps), so the job could never run ("
check "... listing the types' bandwidth" contains "$ERR" "p3.16xlarge has 25Gbps"
refused currency "budget: 5 XYZ" \
    "currency.yaml: budget: no rate for XYZ in currency_rates (ebb.yaml), so ebbd cannot compare the job's budget with prices and caps; add one"
expect_exit 0 "jobs --all" "$EBB" --state-dir "$S" jobs --all --json
check "nothing refused was stored" test "$(json_get "$OUT" 'len(d["jobs"])')" = 0

# (The built-in configuration's own machine, "local", is free: a job that
# may run there has steps that cost nothing.)
spec tiny "budget: 0.000001 USD
resources: {instance_types: [p3.2xlarge]}"
expect_exit 0 "a budget below any step is taken" "$EBB" --state-dir "$S" submit "$TMP/tiny.yaml"
TINY=$OUT
state=""
for _ in $(seq 1 100); do
    state=$("$EBB" --state-dir "$S" job show "$TINY" --json 2>/dev/null |
            python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])')
    [ "$state" = budget_exhausted ] && break
    sleep 0.05
done
check "... and ends budget_exhausted" test "$state" = budget_exhausted
expect_exit 0 "job show" "$EBB" --state-dir "$S" job show "$TINY" --json
check "... without a launch" test "$(json_get "$OUT" 'len(d["instances"])')" = 0
check "... saying what the cheapest step costs" \
    test "$(json_get "$OUT" '"the cheapest step left" in d["events"][-1]["reason"]')" = True
stop_daemon TERM
check "ebbd stops" test "$DAEMON_EXIT" = 0

# No spot capacity anywhere: a spot job waits, and says why.
S="$TMP/state2"
cat >"$TMP/ebb.yaml" <<YAML
providers:
  sim:
    prices: $EBB_SOURCE_ROOT/tests/data/engine/prices_flat.csv
    availability: $EBB_SOURCE_ROOT/tests/data/engine/avail_none.csv
clock: {start: 2020-01-01T06:00:00Z, speed: 1200}
agent_api: {listen: 127.0.0.1:0}
currency_rates: {EUR: 1.08}
YAML
printf 'name: nocap\nrun: [python3, train.py]\nwork: 1h\nmarket: spot\ndeadline: 2020-01-01T08:00:00Z\n' >"$TMP/nocap.yaml"
printf 'name: eur\nrun: [python3, train.py]\nwork: 1h\nmarket: spot\nbudget: 5 EUR\n' >"$TMP/eur.yaml"
printf 'name: usd\nrun: [python3, train.py]\nwork: 1h\nmarket: spot\nbudget: 5 USD\n' >"$TMP/usd.yaml"
check "ebbd starts without spot capacity" start_daemon "$S" --config "$TMP/ebb.yaml"
expect_exit 0 "submit a spot job with a deadline" "$EBB" --state-dir "$S" submit "$TMP/nocap.yaml"
NOCAP=$OUT
expect_exit 0 "submit a job capped in EUR" "$EBB" --state-dir "$S" submit "$TMP/eur.yaml"
EUR=$OUT
expect_exit 0 "submit a job capped in USD" "$EBB" --state-dir "$S" submit "$TMP/usd.yaml"
USD=$OUT
reason=""
for _ in $(seq 1 100); do
    reason=$("$EBB" --state-dir "$S" jobs --json |
             python3 -c "import json,sys; print([j for j in json.load(sys.stdin)['jobs'] if j['id'] == '$NOCAP'][0]['waiting_reason'] or '')")
    [ -n "$reason" ] && break
    sleep 0.05
done
check "ebb jobs --json gives a waiting job's waiting_reason ($reason)" contains "$reason" "spot"
expect_exit 0 "jobs" "$EBB" --state-dir "$S" jobs
check "ebb jobs shows it" contains "$OUT" "$reason"
expect_exit 0 "job show" "$EBB" --state-dir "$S" job show "$NOCAP"
check "ebb job show shows it" contains "$OUT" "  waiting:     $reason"
state=""
for _ in $(seq 1 200); do
    state=$("$EBB" --state-dir "$S" job show "$NOCAP" --json |
            python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])')
    [ "$state" = waiting ] || break
    sleep 0.05
done
check "the deadline passes: deadline_missed" test "$state" = deadline_missed
expect_exit 0 "job show" "$EBB" --state-dir "$S" job show "$NOCAP" --json
check "... at the deadline" test "$(json_get "$OUT" '0 <= d["updated_at"] - d["deadline"] < 60000')" = True
check "... saying so" \
    test "$(json_get "$OUT" '"the deadline 2020-01-01T08:00:00Z passed" in d["events"][-1]["reason"]')" = True
check "... and no longer says it waits" test "$(json_get "$OUT" 'd["waiting_reason"]')" = None

expect_exit 0 "ebb budget with every rate" "$EBB" --state-dir "$S" budget --json
check "... shows both capped jobs" test "$(json_get "$OUT" 'len(d["jobs"])')" = 2
stop_daemon TERM
# The EUR rate leaves the config across a restart.
sed -i '/currency_rates/d' "$TMP/ebb.yaml"
check "ebbd starts again without the EUR rate" start_daemon "$S" --config "$TMP/ebb.yaml"
expect_exit 0 "ebb budget still answers" "$EBB" --state-dir "$S" budget --json
B=$OUT
check "the USD job's row adds up" \
    test "$(json_get "$B" '[j for j in d["jobs"] if j["id"] == "'"$USD"'"][0]["cap_micros"]')" = 5000000
check "the EUR job's row says why it has no figures" \
    test "$(json_get "$B" '"no currency_rates entry for EUR" in [j for j in d["jobs"] if j["id"] == "'"$EUR"'"][0]["error"]')" = True
expect_exit 0 "ebb budget (table)" "$EBB" --state-dir "$S" budget
check "... names the job and the missing rate" contains "$OUT" "$EUR: cannot convert the job's amounts to USD: no currency_rates entry for EUR"
stop_daemon TERM
check "ebbd stops" test "$DAEMON_EXIT" = 0
finish
