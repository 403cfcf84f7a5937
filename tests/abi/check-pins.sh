#!/usr/bin/env bash
# Fails when a public struct or enum has no pin in test_abi.c: every
# `typedef struct spmd_x {` needs PIN_SIZE(spmd_x, ...) and every
# `typedef enum spmd_x {` a "spmd_x values moved" static assertion, so a new
# public type cannot join the ABI without its layout being written down.
#
# usage: check-pins.sh TEST_ABI_C HEADER_DIR...
set -euo pipefail

pins=$1
shift
bad=0 count=0
for dir in "$@"; do
  for h in "$dir"/*.h; do
    while read -r kind name; do
      count=$((count + 1))
      if [[ $kind == struct ]]; then
        grep -q "PIN_SIZE($name," "$pins" ||
          { echo "FAIL: struct $name (${h##*/}) has no PIN_SIZE in ${pins##*/}"; bad=1; }
      else
        grep -q "\"$name values moved\"" "$pins" ||
          { echo "FAIL: enum $name (${h##*/}) has no \"$name values moved\" assertion in ${pins##*/}"; bad=1; }
      fi
    done < <(sed -n 's/^typedef \(struct\|enum\) \(spmd_[a-z0-9_]*\) {.*/\1 \2/p' "$h")
  done
done
[[ $bad -eq 0 ]] || exit 1
echo "ok: all $count public structs and enums are pinned in ${pins##*/}"
