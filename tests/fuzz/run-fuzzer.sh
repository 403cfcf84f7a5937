#!/usr/bin/env bash
# run-fuzzer.sh FUZZER SEEDS WORK SECONDS MAX_LEN [DICT]
# Runs a libFuzzer target from its committed seeds (SEEDS, only read) for
# SECONDS, new inputs going to a fresh WORK/corpus. Prints one line with the
# exec count and coverage; fails on any finding (a crash, a violated
# property, a leak, an input slower than 10 s, memory past 4 GiB), printing
# the report and where the reproducer was written.
set -uo pipefail

fuzzer=$1 seeds=$2 work=$3 seconds=$4 max_len=$5 dict=${6:-}
name=$(basename "$fuzzer")

rm -rf "$work"
mkdir -p "$work/corpus" "$work/artifacts"
args=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 -max_len="$max_len"
      -print_final_stats=1 -artifact_prefix="$work/artifacts/")
[ -n "$dict" ] && args+=(-dict="$dict")

export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
"$fuzzer" "${args[@]}" "$work/corpus" "$seeds" >"$work/log" 2>&1
rc=$?

execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log" | tail -n 1)
last=$(grep -E '^#[0-9]+' "$work/log" | tail -n 1)
cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
seed_count=$(find "$seeds" -type f | wc -l)
new_count=$(find "$work/corpus" -type f | wc -l)
echo "$name: ${execs:-?} execs in ${seconds} s, cov ${cov:-?} edges, ft ${ft:-?} features," \
     "${seed_count} seeds, ${new_count} new inputs"

findings=$(find "$work/artifacts" -type f)
if [ "$rc" -ne 0 ] || [ -n "$findings" ]; then
  echo "FAIL: $name exited with $rc"
  tail -n 80 "$work/log"
  for f in $findings; do
    echo "reproducer: $f (run: $fuzzer $f)"
  done
  exit 1
fi
