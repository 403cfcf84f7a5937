#!/usr/bin/env bash
# libspmd's collectives over several processes beside flat MPI, in one
# sitting: for f32 sizes 8 B .. 64 MiB, all_reduce, all_gather and
# reduce_scatter timed as
#   flat8  MPI's own collective, 8 ranks (one per device), no libspmd
#   flat2  MPI's own collective, 2 ranks
#   2x4    libspmd, 2 processes x 4 devices (SPMD_DISTRIBUTED=mpi), 8 devices
#   4x2    libspmd, 4 processes x 2 devices, 8 devices
#   jax2x4 JAX, 2 processes x 4 CPU devices (jax.distributed, gloo), the
#          same collective in a jitted shard_map over all 8 devices
#          (tools/jax_mp_bench.py), fewer iterations (JAX's calls take ms)
#   jax4x2 JAX, 4 processes x 2 CPU devices
# Sizes are counted as nccl-tests counts them (spmd-bench -h), so every
# column of a row moves the same bytes per device, save flat2 (2 ranks
# share what the others split 8 ways for all_gather and reduce_scatter).
# The runs are interleaved: each band of sizes is run by all of them in turn
# before the next band, large sizes with fewer iterations, so all see the
# same machine. Prints every run's output, then a table of median times
# (us), the ratio of libspmd's time to flat MPI's over 8 ranks and to JAX's
# on the same processes x devices. Without a Python that has JAX the JAX
# columns are left out (said so at the start); a failed JAX run leaves its
# sizes '-' and the script goes on.
#
# usage: tools/mpi-bench.sh [BUILD_DIR]     (default: build)
# env:   OMPI_MCA_mpi_yield_when_idle   OpenMPI's yield setting (default 1:
#                                       the machine is oversubscribed)
#        SPMD_BENCH_THREADS             worker threads per libspmd process
#                                       (default: cores / processes, at least 1)
#        SPMD_BENCH_CHECK               check libspmd's results (default 1)
#        MPIRUN                         the launcher (default: mpirun)
#        OUT                            keep the raw outputs there
#        JAX_PYTHON                     the Python with JAX (default:
#                                       .venv-conformance/bin/python of this
#                                       checkout, else of the main worktree)
#        JAX_CONFIGS                    JAX's runs (default "2x4 4x2"; "" none)
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$here/build}
bench=$build/tools/spmd-bench
plugin=$build/src/libspmd_mpi.so
for f in "$bench" "$plugin"; do
  [[ -e $f ]] || { echo "mpi-bench.sh: $f is missing: build spmd-bench and spmd_mpi in $build" >&2; exit 2; }
done
mpirun=${MPIRUN:-mpirun}
cores=$(nproc)
check=${SPMD_BENCH_CHECK:-1}
export OMPI_MCA_mpi_yield_when_idle=${OMPI_MCA_mpi_yield_when_idle:-1}
export SPMD_MPI_PLUGIN=$plugin
if [[ $(id -u) == 0 ]]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
out=${OUT:-$(mktemp -d /tmp/mpi-bench.XXXXXX)}
mkdir -p "$out"

ops=all_reduce,all_gather,reduce_scatter
# bands: smallest largest iterations warm-ups, then JAX's iterations and
# warm-ups; the largest sizes one by one, so that the runs of a size follow
# each other
bands=("8 4K 100 10 10 2" "8K 256K 40 5 10 2" "512K 1M 15 2 8 2" "2M 4M 8 2 5 1"
       "8M 8M 3 1 3 1" "16M 16M 3 1 3 1" "32M 32M 3 1 3 1" "64M 64M 3 1 3 1")
configs=(flat8 flat2 2x4 4x2)

# JAX: the Python that has it, and its runs.
jax_py=${JAX_PYTHON:-}
if [[ -z $jax_py ]]; then
  jax_py=$here/.venv-conformance/bin/python
  if [[ ! -x $jax_py ]]; then
    main_tree=$(git -C "$here" rev-parse --path-format=absolute --git-common-dir 2>/dev/null || true)
    main_tree=${main_tree%/.git}
    [[ -n $main_tree && -x $main_tree/.venv-conformance/bin/python ]] && jax_py=$main_tree/.venv-conformance/bin/python
  fi
fi
jax_configs=()
jax_note="no JAX columns: $jax_py is missing or has no jax (set JAX_PYTHON; conformance/setup makes .venv-conformance)"
if [[ -x $jax_py ]] && jax_version=$("$jax_py" -c 'import jax; print(jax.__version__)' 2>/dev/null); then
  for c in ${JAX_CONFIGS-2x4 4x2}; do jax_configs+=("jax$c"); done
  jax_note="JAX $jax_version ($jax_py): ${jax_configs[*]:-none}; jitted shard_map, gloo over TCP loopback (one gloo rank per device), each call after a barrier (a small psum), time of a call: the slowest process's"
fi
configs+=("${jax_configs[@]}")

threads_for() { # processes
  local t=$((cores / $1))
  ((t >= 1)) || t=1
  echo "${SPMD_BENCH_THREADS:-$t}"
}

run() { # config band-args...
  local cfg=$1 b=$2 e=$3 n=$4 w=$5 jn=$6 jw=$7
  local common=(-o "$ops" -d float -b "$b" -e "$e" -n "$n" -w "$w")
  case $cfg in
    jax*)
      local pl=${cfg#jax} # PxL
      local p=${pl%x*} l=${pl#*x}
      "$jax_py" "$here/tools/jax_mp_bench.py" -P "$p" -L "$l" -o "$ops" -b "$b" -e "$e" \
        -n "$jn" -w "$jw" -t 240 ;;
    flat8) "$mpirun" -np 8 --oversubscribe "$bench" -M only "${common[@]}" ;;
    flat2) "$mpirun" -np 2 --oversubscribe "$bench" -M only "${common[@]}" ;;
    2x4 | 4x2)
      local p=${cfg%x*} l=${cfg#*x}
      "$mpirun" -np "$p" --oversubscribe -x SPMD_DISTRIBUTED=mpi -x SPMD_MPI_PLUGIN \
        -x OMPI_MCA_mpi_yield_when_idle \
        "$bench" -g "$l" -T "$(threads_for "$p")" -r 0 -c "$check" "${common[@]}" ;;
  esac
}

echo "# mpi-bench.sh: $(date -u +%FT%TZ), $cores cores, $(uptime | sed 's/.*load/load/')"
echo "# $("$mpirun" --version 2>&1 | head -1); OMPI_MCA_mpi_yield_when_idle=$OMPI_MCA_mpi_yield_when_idle; oversubscribed (--oversubscribe)"
echo "# libspmd processes: $(threads_for 2) worker threads each for 2x4, $(threads_for 4) for 4x2; results checked: $check"
echo "# $jax_note"
echo "# raw outputs: $out"
for cfg in "${jax_configs[@]}"; do touch "$out/$cfg"; done # read by the table even if every run failed
start=$SECONDS
for band in "${bands[@]}"; do
  for cfg in "${configs[@]}"; do
    echo "## $cfg, sizes $band (min max iterations warm-ups, JAX's iterations warm-ups), $(date -u +%T)"
    t0=$SECONDS
    if [[ $cfg == jax* ]]; then
      # A failed JAX run leaves its sizes '-'; the others go on.
      # shellcheck disable=SC2086
      run "$cfg" $band | tee -a "$out/$cfg" || echo "## $cfg failed (exit status ${PIPESTATUS[0]}); going on"
    else
      # shellcheck disable=SC2086
      run "$cfg" $band | tee -a "$out/$cfg"
    fi
    echo "## $cfg: $((SECONDS - t0)) s"
  done
done
echo "# all runs: $((SECONDS - start)) s; $(uptime | sed 's/.*load/load/')"

# The table: median time (column 6) per collective and size (column 1).
echo
echo "# median time of one call (us), f32; ratio = libspmd time / flat MPI 8 ranks time, or / JAX's on the same processes x devices (below 1: libspmd faster)"
awk -v configs="${configs[*]}" '
  FNR == 1 { cfg = FILENAME; sub(/.*\//, "", cfg) }
  /^#/ || NF < 6 { next }
  { key = $4 " " $1; t[key, cfg] = $6; if (!(key in seen)) { seen[key] = 1; keys[++nk] = key } }
  END {
    nc = split(configs, c, " ")
    printf "%-15s %10s", "collective", "size(B)"
    for (i = 1; i <= nc; ++i) printf " %11s", c[i]
    printf " %10s %10s", "2x4/flat8", "4x2/flat8"
    for (i = 1; i <= nc; ++i) if (c[i] ~ /^jax/) printf " %11s", substr(c[i], 4) "/" c[i]
    printf "\n"
    # order: collective, then size
    for (i = 1; i <= nk; ++i) order[i] = i
    for (i = 1; i <= nk; ++i) for (j = i + 1; j <= nk; ++j) {
      split(keys[order[i]], a, " "); split(keys[order[j]], bb, " ")
      if (a[1] > bb[1] || (a[1] == bb[1] && a[2] + 0 > bb[2] + 0)) { x = order[i]; order[i] = order[j]; order[j] = x }
    }
    for (i = 1; i <= nk; ++i) {
      k = keys[order[i]]; split(k, a, " ")
      printf "%-15s %10s", a[1], a[2]
      for (j = 1; j <= nc; ++j) printf " %11s", ((k, c[j]) in t) ? t[k, c[j]] : "-"
      f8 = ((k, "flat8") in t) ? t[k, "flat8"] : 0
      for (j = 1; j <= nc; ++j) if (c[j] == "2x4" || c[j] == "4x2")
        printf " %10s", (f8 > 0 && (k, c[j]) in t) ? sprintf("%.2f", t[k, c[j]] / f8) : "-"
      for (j = 1; j <= nc; ++j) if (c[j] ~ /^jax/) {
        o = substr(c[j], 4)
        printf " %11s", ((k, o) in t && (k, c[j]) in t && t[k, c[j]] > 0) ? sprintf("%.2f", t[k, o] / t[k, c[j]]) : "-"
      }
      printf "\n"
    }
  }' "${configs[@]/#/$out/}"
