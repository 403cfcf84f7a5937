#!/usr/bin/env bash
# Builds examples/c/hello.c against the installed prefix the way a user of
# Debian would, with pkg-config: once against the shared library, once
# against the static archive with `pkg-config --static`, runs both and checks
# their output.
#
# usage: pkgconfig-consumer.sh PREFIX LIBDIR VERSION HELLO_C EXPECTED WORK_DIR CC
set -euo pipefail

prefix=$1 libdir=$2 version=$3 hello=$4 expected=$5 work=$6 cc=$7
rm -rf "$work"
mkdir -p "$work"
export PKG_CONFIG_PATH=$prefix/$libdir/pkgconfig
export SPMD_CPU_DEVICES=8
bad=0
fail() { echo "FAIL: $*"; bad=1; }

got=$(pkg-config --modversion spmd)
[[ $got == "$version" ]] || fail "pkg-config --modversion spmd says '$got', expected $version"
[[ $(pkg-config --variable=prefix spmd) == "$prefix" ]] ||
  fail "spmd.pc's prefix is '$(pkg-config --variable=prefix spmd)', not $prefix"
sed "s/@VERSION@/$version/" "$expected" >"$work/expected.txt"

check_output() { # binary description [env...]
  local bin=$1 what=$2
  shift 2
  if ! env "$@" "$bin" >"$bin.out" 2>&1; then
    fail "$what: $bin exited with an error:
$(cat "$bin.out")"
  elif ! diff -u "$work/expected.txt" "$bin.out"; then
    fail "$what: output differs from $expected"
  else
    echo "ok: $what runs and prints the expected $(wc -l <"$bin.out") lines"
  fi
}

# Shared: cc hello.c $(pkg-config --cflags --libs spmd)
# shellcheck disable=SC2046
if ! "$cc" "$hello" $(pkg-config --cflags --libs spmd) -o "$work/hello-shared"; then
  echo "FAIL: cc hello.c \$(pkg-config --cflags --libs spmd)"
  exit 1
fi
readelf -d "$work/hello-shared" | grep -q 'NEEDED.*\[libspmd\.so\.'"${version%%.*}"'\]' ||
  fail "hello-shared does not load libspmd.so.${version%%.*}"
check_output "$work/hello-shared" "hello linked with the shared library" \
  LD_LIBRARY_PATH="$prefix/$libdir"

# Static: the same flags with --static; -lspmd is pinned to the archive, as
# it is when only libspmd.a is installed.
# shellcheck disable=SC2046
static_libs=$(pkg-config --static --libs spmd | sed 's/-lspmd\b/-l:libspmd.a/')
# shellcheck disable=SC2086
if ! "$cc" "$hello" $(pkg-config --cflags spmd) $static_libs -o "$work/hello-static"; then
  echo "FAIL: cc hello.c \$(pkg-config --static --cflags --libs spmd) with -lspmd as libspmd.a"
  exit 1
fi
if readelf -d "$work/hello-static" | grep -q 'NEEDED.*libspmd'; then
  fail "hello-static still needs a shared libspmd"
fi
check_output "$work/hello-static" "hello linked with the static library"

# The archive alone is not enough: Libs.private is what makes the static link
# work, so without it the same link must fail.
# shellcheck disable=SC2046
if "$cc" "$hello" $(pkg-config --cflags spmd) -L"$prefix/$libdir" -l:libspmd.a \
  -o "$work/hello-no-private" >"$work/no-private.log" 2>&1; then
  fail "linking libspmd.a without Libs.private succeeded; Libs.private is not being tested"
else
  echo "ok: without Libs.private ($(pkg-config --static --libs-only-l spmd | tr -s ' ')) the static link fails, as it should"
fi

[[ $bad -eq 0 ]] || exit 1
