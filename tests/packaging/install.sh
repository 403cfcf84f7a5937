#!/usr/bin/env bash
# `cmake --install` into a fresh prefix, then checks what landed there: every
# public header, both libraries with Debian's names and links, exports limited
# to the C API, and the pkg-config and CMake package files pointing at the
# prefix. The consumer tests build against this prefix.
#
# usage: install.sh BUILD_DIR PREFIX LIBDIR INCLUDEDIR VERSION SOURCE_DIR
set -euo pipefail

build=$1 prefix=$2 libdir=$3 includedir=$4 version=$5 src=$6
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
abi=$here/../abi

rm -rf "$prefix"
cmake --install "$build" --prefix "$prefix" >"$prefix.log" 2>&1 || {
  cat "$prefix.log"
  echo "FAIL: cmake --install"
  exit 1
}
bad=0
fail() { echo "FAIL: $*"; bad=1; }

# Headers: the source tree's, plus the generated version.h.
want=$( (cd "$src/include/spmd" && ls -- *.h; echo version.h) | sort -u)
have=$(cd "$prefix/$includedir/spmd" && ls -- *.h | sort)
[[ $want == "$have" ]] || fail "installed headers differ from include/spmd + version.h:
$(diff <(echo "$want") <(echo "$have") || true)"
grep -q "SPMD_VERSION_STRING \"$version\"" "$prefix/$includedir/spmd/version.h" ||
  fail "installed version.h does not say $version"

lib=$prefix/$libdir
bash "$abi/check-soname.sh" "$lib" spmd "$version" || bad=1
[[ -f $lib/libspmd.a ]] || fail "no $lib/libspmd.a"
bash "$abi/check-exports.sh" "$lib/libspmd.so" "SPMD_${version%%.*}" "$prefix/$includedir/spmd" || bad=1

pc=$lib/pkgconfig/spmd.pc
if [[ -f $pc ]]; then
  grep -qx "prefix=$prefix" "$pc" || fail "$pc does not name the prefix $prefix:
$(cat "$pc")"
  grep -qx "Version: $version" "$pc" || fail "$pc does not say Version: $version"
  grep -q '^Libs.private: .*-lstdc++' "$pc" || fail "$pc lacks the C++ runtime in Libs.private"
else
  fail "no $pc"
fi
for f in spmdConfig.cmake spmdConfigVersion.cmake spmdTargets.cmake; do
  [[ -f $lib/cmake/spmd/$f ]] || fail "no $lib/cmake/spmd/$f"
done

[[ $bad -eq 0 ]] || exit 1
echo "ok: libspmd $version installed into $prefix"
