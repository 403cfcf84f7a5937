#!/usr/bin/env bash
# Sets up what is missing, builds libspmd and runs every test, three times:
# a plain build, one with AddressSanitizer + UndefinedBehaviorSanitizer, and
# one with ThreadSanitizer. Every suite runs on the cpu platform and again on
# the sim platform. The plain build also compiles the CUDA platform when
# nvcc is found (it runs only where a GPU is); the sanitizer builds leave it
# out, the CUDA runtime not being instrumented. Fails on the first
# configuration that fails.
set -euo pipefail
cd "$(dirname "$0")/.."

tools/deps.sh
jobs=$(nproc)

run_config() {
  local dir=$1
  shift
  echo "=== $dir: configure ($*) ==="
  local log
  log=$(mktemp)
  if ! cmake -S . -B "$dir" "$@" >"$log" 2>&1; then
    cat "$log"
    rm -f "$log"
    return 1
  fi
  grep -E "^-- libspmd platforms" "$log" || true
  rm -f "$log"
  echo "=== $dir: build ==="
  cmake --build "$dir" -j "$jobs"
  echo "=== $dir: test ==="
  (cd "$dir" && ctest --output-on-failure -j "$jobs")
}

run_config build -DCMAKE_BUILD_TYPE=RelWithDebInfo
run_config build-asan -DCMAKE_BUILD_TYPE=Debug -DSPMD_SANITIZE=address,undefined -DSPMD_WITH_CUDA=OFF
run_config build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSPMD_SANITIZE=thread -DSPMD_WITH_CUDA=OFF
echo "=== all configurations passed ==="
