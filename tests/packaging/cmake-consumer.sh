#!/usr/bin/env bash
# Configures and builds tests/consumer/cmake, a project outside the tree that
# does find_package(spmd CONFIG REQUIRED), against the installed prefix; runs
# its programs linked with spmd::spmd and spmd::spmd_static. Also checks the
# package's version rule: another major version is refused.
#
# usage: cmake-consumer.sh PREFIX LIBDIR VERSION CONSUMER_SRC WORK_DIR GENERATOR CC
set -euo pipefail

prefix=$1 libdir=$2 version=$3 src=$4 work=$5 generator=$6 cc=$7
rm -rf "$work"
mkdir -p "$work"
bad=0
fail() { echo "FAIL: $*"; bad=1; }
major=${version%%.*}

configure() { # build-dir log extra-args...
  local dir=$1 log=$2
  shift 2
  cmake -S "$src" -B "$dir" -G "$generator" -DCMAKE_C_COMPILER="$cc" \
    -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF "$@" >"$log" 2>&1
}

if ! configure "$work/build" "$work/configure.log" -DSPMD_WANT_VERSION="$major.0"; then
  cat "$work/configure.log"
  echo "FAIL: find_package(spmd $major.0 CONFIG REQUIRED) against $prefix"
  exit 1
fi
grep -q "spmd $version found in $prefix/$libdir/cmake/spmd" "$work/configure.log" ||
  fail "find_package did not find libspmd $version in $prefix:
$(grep 'spmd' "$work/configure.log")"
if ! cmake --build "$work/build" >"$work/build.log" 2>&1; then
  cat "$work/build.log"
  echo "FAIL: building the consumer"
  exit 1
fi

want="consumer of libspmd $version: Mesh('x': 4)"
for kind in shared static; do
  bin=$work/build/consumer_$kind
  out=$(LD_LIBRARY_PATH="$prefix/$libdir" "$bin" 2>&1) || fail "consumer_$kind failed: $out"
  [[ $out == "$want" ]] || fail "consumer_$kind printed '$out', expected '$want'"
  needs=$(readelf -d "$bin" | grep -c 'NEEDED.*libspmd' || true)
  if [[ $kind == shared && $needs -ne 1 ]] || [[ $kind == static && $needs -ne 0 ]]; then
    fail "consumer_$kind links libspmd the wrong way (NEEDED libspmd: $needs)"
  fi
  [[ $bad -ne 0 ]] || echo "ok: consumer_$kind (spmd::spmd$([[ $kind == static ]] && echo _static)) prints \"$out\""
done

# SameMajorVersion: asking for the next major version must fail.
if configure "$work/next-major" "$work/next-major.log" -DSPMD_WANT_VERSION="$((major + 1)).0"; then
  fail "find_package(spmd $((major + 1)).0) accepted libspmd $version"
else
  echo "ok: find_package(spmd $((major + 1)).0) refuses libspmd $version"
fi

[[ $bad -eq 0 ]] || exit 1
