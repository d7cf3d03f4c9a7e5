#!/bin/sh
# Runs one libFuzzer target for a while, as the fuzzing section of
# docs/security.md describes:
#   tests/fuzz/run-fuzzer.sh BUILD_DIR NAME [SECONDS]
# BUILD_DIR is a -Dfuzz=libfuzzer build (with -Db_sanitize=address,undefined).
# New inputs go to BUILD_DIR/fuzz-corpus/NAME (seeded from the checked-in
# tests/fuzz/corpus/NAME, which is only read), crashers to
# BUILD_DIR/fuzz-crashers/NAME/, the log to BUILD_DIR/fuzz-NAME.log. It runs
# under `nice -n 10` so that builds on the same machine keep their CPU.
set -eu
build=$1
name=$2
seconds=${3:-600}
src=$(cd "$(dirname "$0")" && pwd)
exe=$build/tests/fuzz/fuzz-$name
[ -x "$exe" ] || { echo "no $exe: build it with ninja -C $build" >&2; exit 2; }
mkdir -p "$build/fuzz-corpus/$name" "$build/fuzz-crashers/$name"
# UBSan only reports unless told to stop; a report must be a crash here.
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
ASAN_OPTIONS=detect_leaks=1 \
nice -n 10 "$exe" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 \
    -print_final_stats=1 \
    -artifact_prefix="$build/fuzz-crashers/$name/" \
    "$build/fuzz-corpus/$name" "$src/corpus/$name" \
    >"$build/fuzz-$name.log" 2>&1
