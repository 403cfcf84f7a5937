#!/usr/bin/env bash
# Shows that tools/abi-check tells compatible from incompatible changes.
#
# 1. A miniature library (fixture/) is built once as the baseline and then in
#    variants, each compiled into a .so with the same SONAME: additions must
#    pass, every kind of break must be rejected.
# 2. A copy of the real libspmd, linked from its own static archive with one
#    function hidden, must be rejected against the ABI of the libspmd.so of
#    the same build; the same copy with nothing hidden must pass.
#
# usage: abi-check-rejects-incompatible.sh PYTHON ABI_CHECK FIXTURE_DIR WORK_DIR
#            CC [LIBSPMD_SO LIBSPMD_A HEADER_DIR...]
set -euo pipefail

python=$1 abi_check=$2 fixture=$3 work=$4 cc=$5
shift 5

rm -rf "$work"
mkdir -p "$work"
failures=0

build_fixture() { # name cflags...
  local name=$1
  shift
  mkdir -p "$work/$name"
  "$cc" -g -O1 -shared -fPIC -Wl,-soname,libfx.so.1 -I"$fixture" "$@" \
    "$fixture/fixture.c" -o "$work/$name/libfx.so.1"
}

expect() { # accept|reject name description
  local want=$1 name=$2 what=$3 rc=0
  "$python" "$abi_check" compare "$work/base.abi" "$work/$name/libfx.so.1" \
    --headers "$fixture" >"$work/$name/report.txt" 2>&1 || rc=$?
  if [[ $rc -ge 2 ]]; then
    echo "FAIL  $what: abi-check could not run (exit $rc)"
    cat "$work/$name/report.txt"
    failures=$((failures + 1))
  elif [[ $want == accept && $rc -eq 0 ]] || [[ $want == reject && $rc -eq 1 ]]; then
    echo "ok    $what: ${want}ed"
  else
    echo "FAIL  $what: expected abi-check to $want it"
    cat "$work/$name/report.txt"
    failures=$((failures + 1))
  fi
}

build_fixture base
"$python" "$abi_check" dump "$work/base/libfx.so.1" "$work/base.abi" --headers "$fixture"

build_fixture same
build_fixture add_function -DFX_ADD_FUNCTION
build_fixture enum_append -DFX_ENUM_APPEND
build_fixture options_append -DFX_OPTIONS_APPEND
build_fixture all_additions -DFX_ADD_FUNCTION -DFX_ENUM_APPEND -DFX_OPTIONS_APPEND
build_fixture remove_function -DFX_REMOVE_FUNCTION
build_fixture param_change -DFX_PARAM_CHANGE
build_fixture enum_renumber -DFX_ENUM_RENUMBER
build_fixture options_swap -DFX_OPTIONS_SWAP
build_fixture options_insert -DFX_OPTIONS_INSERT
build_fixture options_retype -DFX_OPTIONS_RETYPE
build_fixture options_append_in_padding -DFX_OPTIONS_APPEND_IN_PADDING
build_fixture point_grow -DFX_POINT_GROW
build_fixture additions_and_removal -DFX_ADD_FUNCTION -DFX_REMOVE_FUNCTION
mkdir -p "$work/soname_bump"
"$cc" -g -O1 -shared -fPIC -Wl,-soname,libfx.so.2 -I"$fixture" \
  "$fixture/fixture.c" -o "$work/soname_bump/libfx.so.1"

expect accept same "an unchanged rebuild"
expect accept add_function "a new function and a new struct"
expect accept enum_append "a new enumerator after the old ones"
expect accept options_append "a field appended to an options struct after its old size"
expect accept all_additions "all additions together"
expect reject remove_function "a removed function"
expect reject param_change "a parameter type changed (double -> float)"
expect reject enum_renumber "enumerators renumbered"
expect reject options_swap "two options fields swapped"
expect reject options_insert "a field inserted in the middle of an options struct"
expect reject options_retype "an options field's type changed (int -> unsigned)"
expect reject options_append_in_padding "a field appended inside the old tail padding"
expect reject point_grow "a by-value struct grown"
expect reject additions_and_removal "a removal hidden among additions"
expect reject soname_bump "a changed SONAME"

# The real library: an incompatible copy made from libspmd's own objects.
if [[ $# -ge 3 ]] && ! readelf -S -W "$1" | grep -q '\.debug_info'; then
  echo "note: $1 has no debug info; the real-library part needs a RelWithDebInfo build"
elif [[ $# -ge 3 ]]; then
  library=$1 archive=$2
  shift 2
  headers=()
  for h in "$@"; do headers+=(--headers "$h"); done
  baseline=$work/libspmd.abi
  "$python" "$abi_check" dump "$library" "$baseline" "${headers[@]}"
  # The function to hide: the first one the baseline records.
  victim=$(grep -o "<elf-symbol name='spmd_[a-z0-9_]*'" "$baseline" | head -n1 | cut -d"'" -f2)
  soname=$(grep -o "soname='[^']*'" "$baseline" | head -n1 | cut -d"'" -f2)
  node=$(grep -o "<elf-symbol name='spmd_[a-z0-9_]*' version='[^']*'" "$baseline" | head -n1 | cut -d"'" -f4)
  printf '%s {\n  global:\n    spmd_*;\n  local:\n    *;\n};\n' "$node" >"$work/full.map"
  printf '%s {\n  global:\n    spmd_*;\n  local:\n    %s;\n    *;\n};\n' "$node" "$victim" >"$work/hidden.map"
  for v in full hidden; do
    mkdir -p "$work/real_$v"
    "$cc" -shared -Wl,-soname,"$soname" -Wl,--version-script="$work/$v.map" \
      -Wl,--whole-archive "$archive" -Wl,--no-whole-archive -lstdc++ -lpthread -lm \
      -o "$work/real_$v/$soname"
  done
  expect_real() { # accept|reject variant description
    local want=$1 v=$2 what=$3 rc=0
    "$python" "$abi_check" compare "$baseline" "$work/real_$v/$soname" "${headers[@]}" \
      >"$work/real_$v/report.txt" 2>&1 || rc=$?
    if [[ $want == accept && $rc -eq 0 ]] || [[ $want == reject && $rc -eq 1 ]]; then
      echo "ok    $what: ${want}ed"
    else
      echo "FAIL  $what: expected abi-check to $want it (exit $rc)"
      cat "$work/real_$v/report.txt"
      failures=$((failures + 1))
    fi
  }
  expect_real accept full "libspmd relinked from its archive"
  expect_real reject hidden "libspmd relinked without $victim"
fi

if [[ $failures -ne 0 ]]; then
  echo "$failures check(s) failed"
  exit 1
fi
echo "abi-check told every compatible change from every incompatible one"
