#!/usr/bin/env bash
# Sets up what is missing, builds libspmd and runs every test, three times:
# a plain build (with the Go, Rust and Julia bindings' tests), one with
# AddressSanitizer + UndefinedBehaviorSanitizer (the Go and Rust bindings'
# tests too, the sanitizer's runtime preloaded), and one with
# ThreadSanitizer. Every suite runs on the cpu platform and again on
# the sim platform. The plain build also compiles the CUDA platform when
# nvcc is found (it runs only where a GPU is); the sanitizer builds leave it
# out, the CUDA runtime not being instrumented. A fourth configuration,
# clang with ASan + UBSan, builds only the libFuzzer targets (tests/fuzz)
# and runs each from its corpus for SPMD_FUZZ_SECONDS (60). Fails on the
# first configuration that fails.
#
# The MPI plugin and its suites under mpirun (ctest -L mpi): the plain build
# requires MPI (-DSPMD_WITH_MPI=ON, so a missing install fails instead of
# skipping them). The ASan build requires it too and runs them: the
# plugin and libspmd are instrumented, and OpenMPI's own allocations, kept
# until exit, are suppressed for LeakSanitizer by library name
# (tests/mpi/lsan-openmpi.supp), so libspmd's leaks are still found. The
# TSan build leaves MPI out, and oneDNN (its OpenMP threads, equally
# unseen, would show as races in its sgemm; OpenBLAS runs the products
# there): libmpi is not instrumented, so TSan cannot see
# its progress threads' synchronisation and reports races inside it that
# are OpenMPI's, not libspmd's; suppressing them by library would hide the
# boundary where libspmd's own races would show. Its single-process suites
# still run (test_processes there checks that MPI is refused as missing).
set -euo pipefail
cd "$(dirname "$0")/.."

tools/deps.sh
jobs=$(nproc)

# run_config DIR [--only TARGET LABEL] CMAKE_ARGS...: configures DIR, builds
# it (only TARGET when given) and runs its tests (only those labelled LABEL,
# each printing its own summary).
run_config() {
  local dir=$1
  shift
  local build=() select=()
  if [ "${1:-}" = --only ]; then
    build=(--target "$2")
    select=(-L "$3" --verbose)
    shift 3
  fi
  echo "=== $dir: configure ($*) ==="
  local log
  log=$(mktemp)
  if ! cmake -S . -B "$dir" "$@" >"$log" 2>&1; then
    cat "$log"
    rm -f "$log"
    return 1
  fi
  grep -E "^-- libspmd (platforms|distributed)" "$log" || true
  rm -f "$log"
  echo "=== $dir: build ==="
  cmake --build "$dir" -j "$jobs" "${build[@]}"
  echo "=== $dir: test ==="
  (cd "$dir" && ctest --output-on-failure -j "$jobs" "${select[@]}")
}

run_config build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSPMD_BINDINGS=ON -DSPMD_WITH_MPI=ON
# What the Julia binding's test did: Pkg.test() where julia is installed,
# else the static checks alone (tree-sitter parse, ccall signatures).
grep -h -m1 -E "^(julia not found|ran Pkg.test)" build/Testing/Temporary/LastTest.log || true
run_config build-asan -DCMAKE_BUILD_TYPE=Debug -DSPMD_SANITIZE=address,undefined -DSPMD_WITH_CUDA=OFF \
  -DSPMD_BINDINGS=ON -DSPMD_WITH_MPI=ON
run_config build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSPMD_SANITIZE=thread -DSPMD_WITH_CUDA=OFF \
  -DSPMD_BINDINGS=OFF -DSPMD_WITH_MPI=OFF -DSPMD_WITH_ONEDNN=OFF
run_config build-fuzz --only spmd_fuzz fuzz -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSPMD_SANITIZE=address,undefined -DSPMD_FUZZ=ON -DSPMD_WITH_CUDA=OFF \
  -DSPMD_BINDINGS=OFF -DSPMD_WITH_MPI=OFF
echo "=== all configurations passed ==="
