#!/bin/sh
# Runs one fuzz target politely on a shared machine: one worker, lowest priority, bounded time
# and memory. Usage: fuzz/run.sh <target> [seconds] (default 600). Log: fuzz/logs/<target>.log
set -eu
cd "$(dirname "$0")"
target=$1
secs=${2:-600}
mkdir -p logs "corpus/$target"
nice -n 19 cargo +nightly fuzz run "$target" "corpus/$target" -- \
    -jobs=1 -workers=1 -max_total_time="$secs" -rss_limit_mb=2048 -print_final_stats=1 \
    >"logs/$target.log" 2>&1
