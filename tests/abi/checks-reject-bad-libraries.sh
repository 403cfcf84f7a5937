#!/usr/bin/env bash
# Shows that check-exports.sh and check-soname.sh fail on libraries that
# break their rules and pass the one that keeps them.
#
# usage: checks-reject-bad-libraries.sh TESTS_ABI_DIR WORK_DIR CC
set -euo pipefail

here=$1 work=$2 cc=$3
fixture=$here/fixture
rm -rf "$work"
mkdir -p "$work"
failures=0

map='SPMD_0 { global: spmd_*; local: *; };'
echo "$map" >"$work/libspmd.map"
echo 'SPMD_0 { global: spmd_*; helper_*; local: *; };' >"$work/loose.map"

build() { # dir soname cflags...
  local dir=$work/$1 soname=$2
  shift 2
  mkdir -p "$dir"
  "$cc" -shared -fPIC -fvisibility=hidden -I"$fixture" "$@" -Wl,-soname,"$soname" \
    "$fixture/exports.c" -o "$dir/libspmd.so.3.1.4"
  ln -s libspmd.so.3.1.4 "$dir/libspmd.so.3"
  ln -s libspmd.so.3 "$dir/libspmd.so"
}

expect() { # pass|fail description command...
  local want=$1 what=$2 rc=0
  shift 2
  "$@" >"$work/out.txt" 2>&1 || rc=$?
  if [[ $want == pass && $rc -eq 0 ]] || [[ $want == fail && $rc -ne 0 ]]; then
    echo "ok    $what: ${want}ed ($(head -n1 "$work/out.txt"))"
  else
    echo "FAIL  $what: expected the check to $want"
    cat "$work/out.txt"
    failures=$((failures + 1))
  fi
}

exports() { bash "$here/check-exports.sh" "$work/$1/libspmd.so" SPMD_0 "$fixture"; }
soname() { bash "$here/check-soname.sh" "$work/$1" spmd 3.1.4; }

build good libspmd.so.3 -Wl,--version-script="$work/libspmd.map"
build leak libspmd.so.3 -DEX_LEAK
build leak_mapped libspmd.so.3 -DEX_LEAK -Wl,--version-script="$work/loose.map"
build unversioned libspmd.so.3
build undeclared libspmd.so.3 -DEX_UNDECLARED -Wl,--version-script="$work/libspmd.map"
build missing libspmd.so.3 -DEX_MISSING -Wl,--version-script="$work/libspmd.map"
build bad_soname libspmd.so.3.1 -Wl,--version-script="$work/libspmd.map"
build bad_link libspmd.so.3 -Wl,--version-script="$work/libspmd.map"
ln -sfn libspmd.so.3.1.4 "$work/bad_link/libspmd.so"
build copied libspmd.so.3 -Wl,--version-script="$work/libspmd.map"
rm "$work/copied/libspmd.so.3"
cp "$work/copied/libspmd.so.3.1.4" "$work/copied/libspmd.so.3"

expect pass "exports of a library that keeps the rules" exports good
expect fail "a library without a version script (leaks helper_leaked)" exports leak
expect fail "a version script that lets a non-spmd_ symbol out" exports leak_mapped
expect fail "spmd_ symbols without the version node" exports unversioned
expect fail "an exported spmd_ function no header declares" exports undeclared
expect fail "a declared function the library lacks" exports missing
expect pass "names of a library that keeps the rules" soname good
expect fail "a SONAME that is not libspmd.so.MAJOR" soname bad_soname
expect fail "libspmd.so pointing past the SONAME link" soname bad_link
expect fail "libspmd.so.MAJOR a copy instead of a link" soname copied
expect fail "a version the files do not carry" bash "$here/check-soname.sh" "$work/good" spmd 3.2.0

if [[ $failures -ne 0 ]]; then
  echo "$failures check(s) failed"
  exit 1
fi
echo "the export and name checks reject every bad library"
