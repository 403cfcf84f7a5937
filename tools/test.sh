#!/usr/bin/env bash
# Sets up what is missing, builds libspmd and runs every test, three times:
# a plain build, one with AddressSanitizer + UndefinedBehaviorSanitizer, and
# one with ThreadSanitizer. Fails on the first configuration that fails.
set -euo pipefail
cd "$(dirname "$0")/.."

tools/deps.sh
jobs=$(nproc)

run_config() {
  local dir=$1
  shift
  echo "=== $dir: configure ($*) ==="
  cmake -S . -B "$dir" "$@" >/dev/null
  echo "=== $dir: build ==="
  cmake --build "$dir" -j "$jobs"
  echo "=== $dir: test ==="
  (cd "$dir" && ctest --output-on-failure -j "$jobs")
}

run_config build -DCMAKE_BUILD_TYPE=RelWithDebInfo
run_config build-asan -DCMAKE_BUILD_TYPE=Debug -DSPMD_SANITIZE=address,undefined
run_config build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSPMD_SANITIZE=thread
echo "=== all configurations passed ==="
