#!/bin/sh
# Runs one fuzz target politely on a shared machine: one worker, lowest priority, bounded time
# and memory. Usage: fuzz/run.sh <target> [seconds] (default 600).
# With -jobs=1 libFuzzer runs the fuzzing in a child process that logs to fuzz-0.log; that log
# (with the final stats) is kept as logs/<target>.log, cargo-fuzz's own output as
# logs/<target>.cargo.log.
set -eu
cd "$(dirname "$0")"
target=$1
secs=${2:-600}
mkdir -p logs "corpus/$target"
status=0
nice -n 19 cargo +nightly fuzz run "$target" "corpus/$target" -- \
    -jobs=1 -workers=1 -max_total_time="$secs" -rss_limit_mb=2048 -print_final_stats=1 \
    >"logs/$target.cargo.log" 2>&1 || status=$?
mv fuzz-0.log "logs/$target.log"
grep -E 'stat::number_of_executed_units|SUMMARY|panicked' "logs/$target.log" || true
exit "$status"
