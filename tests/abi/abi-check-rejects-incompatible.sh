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

jobs_max=$(nproc 2>/dev/null || echo 2)

# Builds variant NAME of the fixture with SONAME and CFLAGS and compares it
# with the baseline; leaves abi-check's exit status in NAME/rc (3: the
# variant did not build).
variant() { # name soname cflags...
  local name=$1 soname=$2 rc=0
  shift 2
  mkdir -p "$work/$name"
  if ! "$cc" -g -O1 -shared -fPIC -Wl,-soname,"$soname" -I"$fixture" "$@" \
    "$fixture/fixture.c" -o "$work/$name/libfx.so.1" >"$work/$name/report.txt" 2>&1; then
    echo 3 >"$work/$name/rc"
    return
  fi
  "$python" "$abi_check" compare "$work/base.abi" "$work/$name/libfx.so.1" \
    --headers "$fixture" >"$work/$name/report.txt" 2>&1 || rc=$?
  echo "$rc" >"$work/$name/rc"
}
spawn() { # as variant, in the background, at most jobs_max at once
  while [[ $(jobs -rp | wc -l) -ge $jobs_max ]]; do wait -n || true; done
  variant "$@" &
}

expect() { # accept|reject name description
  local want=$1 name=$2 what=$3 rc
  rc=$(cat "$work/$name/rc")
  if [[ $rc -ge 2 ]]; then
    echo "FAIL  $what: the variant did not build or abi-check could not run (exit $rc)"
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

mkdir -p "$work/base"
"$cc" -g -O1 -shared -fPIC -Wl,-soname,libfx.so.1 -I"$fixture" "$fixture/fixture.c" \
  -o "$work/base/libfx.so.1"
"$python" "$abi_check" dump "$work/base/libfx.so.1" "$work/base.abi" --headers "$fixture"

so=libfx.so.1
spawn same $so
spawn add_function $so -DFX_ADD_FUNCTION
spawn enum_append $so -DFX_ENUM_APPEND
spawn options_append $so -DFX_OPTIONS_APPEND
spawn all_additions $so -DFX_ADD_FUNCTION -DFX_ENUM_APPEND -DFX_OPTIONS_APPEND
spawn remove_function $so -DFX_REMOVE_FUNCTION
spawn param_change $so -DFX_PARAM_CHANGE
spawn enum_renumber $so -DFX_ENUM_RENUMBER
spawn options_swap $so -DFX_OPTIONS_SWAP
spawn options_insert $so -DFX_OPTIONS_INSERT
spawn options_retype $so -DFX_OPTIONS_RETYPE
spawn options_append_in_padding $so -DFX_OPTIONS_APPEND_IN_PADDING
spawn point_grow $so -DFX_POINT_GROW
spawn additions_and_removal $so -DFX_ADD_FUNCTION -DFX_REMOVE_FUNCTION
spawn soname_bump libfx.so.2
wait

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
  # The function to hide: the first one the baseline records under the
  # major version node (the glob there is what the hiding overrides).
  victim=$(grep -m1 -o "<elf-symbol name='spmd_[a-z0-9_]*' version='SPMD_[0-9]*'" "$baseline" | cut -d"'" -f2)
  soname=$(grep -m1 -o "soname='[^']*'" "$baseline" | cut -d"'" -f2)
  # The library's own version script, and one that also hides the victim.
  map=$(dirname "$0")/../../src/libspmd.map
  cp "$map" "$work/full.map"
  sed "s/^  local:$/  local:\n    $victim;/" "$map" >"$work/hidden.map"
  for v in full hidden; do
    mkdir -p "$work/real_$v"
    "$cc" -shared -Wl,-soname,"$soname" -Wl,--version-script="$work/$v.map" \
      -Wl,--whole-archive "$archive" -Wl,--no-whole-archive $(pkg-config --libs openblas sleef) -lstdc++ -lpthread -lm \
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
