#!/usr/bin/env bash
# Checks the names of an installed or built shared library against the
# project version, as Debian expects them:
#   libspmd.so.MAJOR.MINOR.PATCH  the real file, whose SONAME is libspmd.so.MAJOR
#   libspmd.so.MAJOR -> libspmd.so.MAJOR.MINOR.PATCH   (what ldconfig makes)
#   libspmd.so -> libspmd.so.MAJOR                      (the link-time name)
#
# usage: check-soname.sh LIBDIR NAME VERSION    e.g. build/src spmd 0.1.0
set -euo pipefail

dir=$1 name=$2 version=$3
major=${version%%.*}
real=lib$name.so.$version
soname=lib$name.so.$major
linker=lib$name.so
bad=0
fail() { echo "FAIL: $*"; bad=1; }

if [[ ! -f $dir/$real || -L $dir/$real ]]; then
  fail "$dir/$real is not a regular file (real name for version $version)"
else
  got=$(readelf -d "$dir/$real" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
  [[ $got == "$soname" ]] || fail "$real has SONAME '$got', expected '$soname'"
fi
if [[ ! -L $dir/$soname ]]; then
  fail "$dir/$soname is not a symbolic link"
elif [[ $(readlink "$dir/$soname") != "$real" ]]; then
  fail "$soname points to '$(readlink "$dir/$soname")', expected '$real'"
fi
if [[ ! -L $dir/$linker ]]; then
  fail "$dir/$linker is not a symbolic link"
elif [[ $(readlink "$dir/$linker") != "$soname" ]]; then
  fail "$linker points to '$(readlink "$dir/$linker")', expected '$soname'"
fi
[[ $bad -eq 0 ]] || exit 1
echo "ok: $dir/$linker -> $soname -> $real, SONAME $soname"
