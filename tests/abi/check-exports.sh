#!/usr/bin/env bash
# Fails unless the dynamic symbols a shared library defines are exactly the
# spmd_ functions its public headers declare, each under the major version
# node or one of its minor nodes (SPMD_1, SPMD_1.1, ...), and the
# experimental ones (spmd_x_, declared under experimental/) under
# SPMD_EXPERIMENTAL, plus the nodes: no C++ or STL symbols, nothing from a
# dependency, no spmd_ helper the headers do not promise.
#
# usage: check-exports.sh LIBRARY VERSION_NODE HEADER_DIR...
set -euo pipefail

lib=$1 node=$2
shift 2

symbols=$(nm -D --defined-only "$lib")
if [[ -z $symbols ]]; then
  echo "FAIL: $lib defines no dynamic symbols"
  exit 1
fi

bad=0
exported=()
while read -r _ type name; do
  if [[ $name =~ ^(${node}(\.[0-9]+)?|SPMD_EXPERIMENTAL)$ && $type == A ]]; then
    continue
  elif [[ $name =~ ^(spmd_x_[a-z0-9_]+)@@SPMD_EXPERIMENTAL$ ]]; then
    exported+=("${BASH_REMATCH[1]}")
  elif [[ $name =~ ^spmd_x_ ]]; then
    echo "FAIL: $lib exports '$name' ($type): experimental functions go under SPMD_EXPERIMENTAL"
    bad=1
  elif [[ $name =~ ^(spmd_[a-z0-9_]+)@@${node}(\.[0-9]+)?$ ]]; then
    exported+=("${BASH_REMATCH[1]}")
  else
    echo "FAIL: $lib exports '$name' ($type): only spmd_ symbols under $node may leave the library"
    bad=1
  fi
done <<<"$symbols"

if ! grep -qx "0* A $node" <<<"$symbols"; then
  echo "FAIL: $lib has no version node $node"
  bad=1
fi

# Every SPMD_API function declared in the public headers.
headers=()
for dir in "$@"; do
  headers+=("$dir"/*.h)
  [[ -d $dir/experimental ]] && headers+=("$dir"/experimental/*.h)
done
declared=$(cat "${headers[@]}" | tr '\n' ' ' | grep -oE 'SPMD_API[^;(]*[^a-zA-Z0-9_]spmd_[a-z0-9_]+[[:space:]]*\(' |
  grep -oE 'spmd_[a-z0-9_]+[[:space:]]*\($' | tr -d ' (' | sort -u)
exported_sorted=$(printf '%s\n' "${exported[@]}" | sort -u)

while read -r name; do
  [[ -n $name ]] || continue
  echo "FAIL: $name is exported but declared in no public header"
  bad=1
done < <(comm -13 <(echo "$declared") <(echo "$exported_sorted"))
while read -r name; do
  [[ -n $name ]] || continue
  echo "FAIL: $name is declared SPMD_API but not exported (not defined, or hidden)"
  bad=1
done < <(comm -23 <(echo "$declared") <(echo "$exported_sorted"))

if [[ $bad -ne 0 ]]; then
  exit 1
fi
echo "ok: $lib exports ${#exported[@]} spmd_ functions under $node and nothing else"
