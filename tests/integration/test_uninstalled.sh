#!/usr/bin/env bash
# Programs run from the build tree find the plugins built beside them and
# the source tree's shipped data with neither EBB_PLUGIN_PATH nor
# EBB_DATA_DIR set; a copy of the same binary outside the build tree looks
# in the install directories instead.
. "$(dirname "$0")/lib.sh"
unset EBB_PLUGIN_PATH EBB_DATA_DIR

S=$TMP/state
check "uninstalled ebbd starts on its built-in config" start_daemon "$S"
expect_exit 0 "ebb prices answers" "$EBB" --state-dir "$S" prices
check "the sim market replays the shipped traces" contains "$OUT" "p3.2xlarge"
expect_exit 0 "ebb status answers" "$EBB" --state-dir "$S" status
check "every shipped policy is loaded" contains "$OUT" "uniform-progress"
check "it found the shipped catalog (no warning)" eval '! grep -q "no instance catalog" "$S.log"'
stop_daemon TERM
check "ebbd stops cleanly" test "$DAEMON_EXIT" = 0

# A catalog that is not where it is looked for is said, with what follows.
mkdir -p "$TMP/nodata"
cat >"$TMP/sim.yaml" <<YAML
providers:
  sim:
    prices: ${EBB_SOURCE_ROOT:?}/data/traces/aws_spot_gpu_p2p3_6regions_2019-12-20_2020-02-29.csv
YAML
export EBB_DATA_DIR="$TMP/nodata"
check "ebbd starts without its catalog" start_daemon "$TMP/state3" --config "$TMP/sim.yaml"
unset EBB_DATA_DIR
stop_daemon TERM
check "it warns that on-demand jobs cannot run" \
    grep -q "no instance catalog at $TMP/nodata/catalog.csv: on-demand offers" "$TMP/state3.log"

mkdir -p "$TMP/elsewhere"
cp "$EBBD" "$TMP/elsewhere/ebbd"
expect_exit 2 "a copy outside the build tree does not use its plugins" \
    "$TMP/elsewhere/ebbd" --state-dir "$TMP/state2"
check "it says where it looked" contains "$ERR" "no provider plugin named"
check "and not in the build tree" eval '! contains "$ERR" "${EBB_BUILD_ROOT:?}"'

finish
