#!/usr/bin/env bash
# The one prepared run on a borrowed GPU machine (one H100 or H200, CUDA 13
# with cuBLAS, NCCL in /usr or in the Python package nvidia-nccl-cu13, JAX;
# no network, and no OpenBLAS, SLEEF, CMocka or pkg-config to count on):
#   1. records the machine: GPU, driver, nvcc, NCCL, cuBLAS, CMake, JAX;
#   2. unpacks the Debian packages tools/gpu-deps.sh fetched into .gpu-deps/
#      (carried with the work tree) and points the build at them;
#   3. builds libspmd with the CUDA platform and the suites' cuda runs;
#   4. runs every suite on the cuda platform (ctest -L cuda; the conformance
#      suite is among them), then the collectives suites again on each
#      collectives path (native, nccl);
#   5. runs the benchmarks: spmd-gpu-bench (the CUDA runtime's cost per
#      call included) and the same work in JAX on the same GPU
#      (tools/gpu_bench_jax.py) first, then spmd-gpu-bench's collectives on
#      each path, its sum on one logical device, spmd-ops-bench and
#      spmd-bench.
# Every step is bounded, the whole run ends within SPMD_GPU_CHECK_SECONDS
# (default 285; later steps get what is left), and a step that fails is
# recorded while the others still run. Exits 1 when a correctness step did
# not pass.
#
# usage: OUT=/an/empty/folder bash tools/gpu-check.sh
# SPMD_GPU_CHECK_TARGETS (targets to build, space separated) with
# SPMD_GPU_CHECK_BUILD_ONLY=1 stops after the build, for a profile or one
# benchmark run by hand on the machine.
# Writes to $OUT: summary.txt (machine, steps, figures beside JAX's, failed
# and skipped tests), build.log, ctest.log, bench.txt, jax.txt, and
# logs.tar.gz (CTest's full logs, CMake's cache).
set -u
cd "$(dirname "$0")/.." || exit 2
start=$(date +%s)
budget=${SPMD_GPU_CHECK_SECONDS:-285}
deadline=$((start + budget))
reserve=8 # seconds kept for the summary
out=${OUT:?"OUT must name the folder the logs go to"}
mkdir -p "$out"
build=${SPMD_GPU_CHECK_BUILD:-build-gpu}
deps=${SPMD_GPU_CHECK_DEPS:-/tmp/spmd-gpu-deps}
jobs=$(nproc)
orig_ld_library_path=${LD_LIBRARY_PATH-}
summary=$out/summary.txt buildlog=$out/build.log ctestlog=$out/ctest.log
benchlog=$out/bench.txt jaxlog=$out/jax.txt
logs=$(mktemp -d /tmp/spmd-gpu-check.XXXXXX) # packed into logs.tar.gz
: >"$summary"
: >"$buildlog"
: >"$ctestlog"
: >"$benchlog"
: >"$jaxlog"

now() { date +%s; }
say() { echo "$*" | tee -a "$summary"; }

# ---- steps: bounded, recorded, never stopping the run ----

step_names=() step_kinds=() step_results=() step_seconds=()
record() {
  step_names+=("$1")
  step_kinds+=("$2")
  step_results+=("$3")
  step_seconds+=("$4")
}
# Replaces the last step's kind and result (a refusal that is no failure).
amend_last() {
  local i=$((${#step_names[@]} - 1))
  step_kinds[i]=$1
  step_results[i]=$2
}

# step NAME KIND LIMIT LOG CMD...: runs CMD for at most LIMIT seconds (fewer
# when the run's end is nearer; skipped when under 10 are left), its output
# appended to LOG. KIND: check (a failure fails the run), info or bench.
# Returns CMD's status, 125 when skipped.
step() {
  local name=$1 kind=$2 limit=$3 log=$4
  shift 4
  local left=$((deadline - $(now) - reserve))
  if ((left < limit)); then limit=$left; fi
  if ((limit < 10)); then
    echo "== $name: skipped, the run's time is spent" | tee -a "$log"
    record "$name" "$kind" "skipped: no time left" 0
    return 125
  fi
  echo "== $name (at most ${limit}s): $*" | tee -a "$log"
  local t0 rc took result
  t0=$(now)
  timeout -k 5 "$limit" "$@" >>"$log" 2>&1
  rc=$?
  took=$(($(now) - t0))
  case $rc in
    0) result=pass ;;
    124 | 137) result="timeout after ${limit}s" ;;
    *) result="fail (exit $rc)" ;;
  esac
  echo "== $name: $result in ${took}s" | tee -a "$log"
  record "$name" "$kind" "$result" "$took"
  return "$rc"
}

# ---- 1. the machine ----

# first_file PATH...: the first that exists; last_file: the last.
first_file() {
  local f
  for f in "$@"; do
    if [ -e "$f" ]; then echo "$f"; return; fi
  done
}
last_file() {
  local f last=
  for f in "$@"; do [ -e "$f" ] && last=$f; done
  echo "$last"
}

# first_line CMD...: the command's first output line, or "(none)".
first_line() {
  local line
  line=$(timeout 20 "$@" 2>/dev/null | head -n 1)
  echo "${line:-(none)}"
}

nvcc=$(command -v nvcc || first_file /usr/local/cuda/bin/nvcc /usr/local/cuda-*/bin/nvcc)
cuda_home=
if [ -n "$nvcc" ]; then
  cuda_home=$(dirname "$(dirname "$(readlink -f "$nvcc")")")
  export CUDACXX=$nvcc
fi

# NCCL, header and library from one place: the system's, the CUDA
# toolkit's, else the Python package nvidia-nccl-cu13's.
nccl_include='' nccl_library='' nccl_from=''
nccl_package=$(timeout 30 python3 -c 'import nvidia.nccl as m; print(list(m.__path__)[0])' 2>/dev/null)
for place in /usr/include:/usr/lib/x86_64-linux-gnu /usr/local/include:/usr/local/lib \
  "$cuda_home/include:$cuda_home/lib64" "$cuda_home/include:$cuda_home/targets/x86_64-linux/lib" \
  "${nccl_package:-/nonexistent}/include:${nccl_package:-/nonexistent}/lib"; do
  if [ -f "${place%%:*}/nccl.h" ] && [ -e "${place#*:}/libnccl.so.2" ]; then
    nccl_include=${place%%:*} nccl_library=${place#*:}/libnccl.so.2
    nccl_from=$(readlink -f "$nccl_library")
    break
  fi
done
nccl_version=none
if [ -n "$nccl_library" ]; then
  nccl_version=$(awk '/^#define NCCL_(MAJOR|MINOR|PATCH)[ \t]/ {v = v (v == "" ? "" : ".") $3}
    END {print v}' "$nccl_include/nccl.h")
fi

cublas_header=$(first_file "$cuda_home"/include/cublas_api.h "$cuda_home"/targets/*/include/cublas_api.h)
cublas_version=unknown
if [ -n "$cublas_header" ]; then
  cublas_version=$(awk '/^#define CUBLAS_VER_(MAJOR|MINOR|PATCH)[ \t]/ {v = v (v == "" ? "" : ".") $3}
    END {print v}' "$cublas_header")
fi
cublas_library=$(last_file "$cuda_home"/lib64/libcublas.so.* "$cuda_home"/targets/*/lib/libcublas.so.*)

say "# libspmd GPU check, $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
say "gpu:      $(first_line nvidia-smi --query-gpu=name,memory.total,compute_cap --format=csv,noheader)"
say "driver:   $(first_line nvidia-smi --query-gpu=driver_version --format=csv,noheader)"
say "nvcc:     ${nvcc:-(none)}: $(timeout 20 "${nvcc:-false}" --version 2>/dev/null | grep -i release || echo '?')"
say "cuBLAS:   $cublas_version (${cublas_library:-no library found})"
say "NCCL:     $nccl_version (${nccl_from:-not found}; header in ${nccl_include:-none})"
say "cmake:    $(first_line cmake --version)"
say "ninja:    $(first_line ninja --version)"
say "c++:      $(first_line c++ --version)"
say "glibc:    $(first_line ldd --version)"
say "python3:  $(first_line python3 --version)"
say "cpus:     $jobs; memory: $(free -g 2>/dev/null | awk '/^Mem:/ {print $2 " GiB"}')"
{
  echo "== nvidia-smi"
  timeout 20 nvidia-smi 2>&1
} >>"$logs/machine.txt"

# JAX's version and devices, found while the build runs (the GPU is idle).
{
  echo "== JAX and the CUDA packages"
  timeout 90 env LD_LIBRARY_PATH="$orig_ld_library_path" XLA_PYTHON_CLIENT_PREALLOCATE=false python3 -c '
import importlib.metadata as md
for d in sorted(md.distributions(), key=lambda d: d.metadata["Name"].lower()):
    n = d.metadata["Name"]
    if n.lower().startswith(("jax", "nvidia-", "torch")):
        print(n, d.version)
import jax
print("JAX", jax.__version__, "devices:", jax.devices())' 2>&1
  echo "== exit $?"
} >"$logs/jax-info.txt" 2>&1 &
jax_info_pid=$!

# ---- 2. the Debian packages ----

# unpack_deb DEB DEST: dpkg-deb, else ar and tar, else Python (a .deb is an
# ar archive holding data.tar.*). SPMD_GPU_CHECK_UNPACK forces one way.
unpack_deb() {
  local deb=$1 dest=$2 way=${SPMD_GPU_CHECK_UNPACK:-}
  if [ -z "$way" ]; then
    if command -v dpkg-deb >/dev/null; then way='dpkg-deb'
    elif command -v ar >/dev/null && command -v xz >/dev/null; then way='ar'
    else way='python'
    fi
  fi
  case $way in
    dpkg-deb) dpkg-deb -x "$deb" "$dest" ;;
    ar)
      local tmp rc
      tmp=$(mktemp -d)
      (cd "$tmp" && ar x "$deb") && tar -xf "$tmp"/data.tar.* -C "$dest"
      rc=$?
      rm -rf "$tmp"
      return "$rc"
      ;;
    python)
      python3 - "$deb" "$dest" <<'PY'
import io, sys, tarfile
data = open(sys.argv[1], "rb").read()
if data[:8] != b"!<arch>\n":
    sys.exit(f"{sys.argv[1]}: not an ar archive")
pos = 8
while pos + 60 <= len(data):
    name = data[pos:pos + 16].decode().strip().rstrip("/")
    size = int(data[pos + 48:pos + 58].decode().strip())
    if name.startswith("data.tar"):
        with tarfile.open(fileobj=io.BytesIO(data[pos + 60:pos + 60 + size])) as t:
            try:
                t.extractall(sys.argv[2], filter="tar")
            except TypeError:  # Python before 3.12
                t.extractall(sys.argv[2])
        sys.exit(0)
    pos += 60 + size + (size & 1)
sys.exit(f"{sys.argv[1]}: no data.tar member")
PY
      ;;
    *) echo "unpack_deb: unknown way '$way'" >&2; return 2 ;;
  esac
}

# pc_version PC: the version a Debian .pc file states.
pc_version() {
  sed -n -e 's/^version=//p' -e 's/^Version: *\([0-9][^ ]*\)$/\1/p' "$1" | head -n 1
}

# Unpacks every package into $deps and writes .pc files that name the
# unpacked paths (Debian's name /usr, and SLEEF's header sits in the
# multiarch include folder, which only the system compiler searches).
unpack_deps() {
  local debs=(.gpu-deps/*.deb)
  if [ ! -f "${debs[0]}" ]; then
    echo "no .gpu-deps/*.deb: run tools/gpu-deps.sh here and carry .gpu-deps"
    return 1
  fi
  rm -rf "$deps"
  mkdir -p "$deps/pkgconfig"
  local deb
  for deb in "${debs[@]}"; do
    # The machine's own pkg-config, where it has one, with its own library.
    case $(basename "$deb") in
      pkgconf* | libpkgconf*) command -v pkg-config >/dev/null && continue ;;
    esac
    unpack_deb "$(readlink -f "$deb")" "$deps" || { echo "cannot unpack $deb"; return 1; }
    echo "unpacked $(basename "$deb")"
  done
  local lib=$deps/usr/lib/x86_64-linux-gnu inc=$deps/usr/include
  write_pc() { # NAME VERSION LIBS CFLAGS
    printf 'Name: %s\nDescription: %s of Debian 12, unpacked by tools/gpu-check.sh\nVersion: %s\nLibs: %s\nCflags: %s\n' \
      "$1" "$1" "$2" "$3" "$4" >"$deps/pkgconfig/$1.pc"
  }
  write_pc openblas "$(pc_version "$lib/openblas-pthread/pkgconfig/openblas.pc")" \
    "-L$lib/openblas-pthread -lopenblas" "-I$inc/x86_64-linux-gnu/openblas-pthread"
  write_pc sleef "$(pc_version "$lib/pkgconfig/sleef.pc")" "-L$lib -lsleef" \
    "-I$inc/x86_64-linux-gnu -I$inc"
  write_pc cmocka "$(pc_version "$lib/pkgconfig/cmocka.pc")" "-L$lib -lcmocka" "-I$inc"
  local f
  for f in "$lib/openblas-pthread/libopenblas.so.0" "$lib/libsleef.so.3" "$lib/libcmocka.so.0" \
    "$inc/x86_64-linux-gnu/openblas-pthread/cblas.h" "$inc/x86_64-linux-gnu/sleef.h" "$inc/cmocka.h" \
    "$inc/dlpack/dlpack.h"; do
    [ -e "$f" ] || { echo "missing after unpacking: $f"; return 1; }
  done
  cat "$deps"/pkgconfig/*.pc
}

t0=$(now)
if unpack_deps >>"$buildlog" 2>&1; then deps_result=pass; else deps_result=fail; fi
record "unpack .gpu-deps into $deps" check "$deps_result" $(($(now) - t0))
echo "== unpack .gpu-deps: $deps_result"
export PKG_CONFIG_PATH=$deps/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
deps_libs=$deps/usr/lib/x86_64-linux-gnu/openblas-pthread:$deps/usr/lib/x86_64-linux-gnu
export LD_LIBRARY_PATH=$deps_libs${nccl_library:+:$(dirname "$nccl_library")}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
command -v pkg-config >/dev/null || export PATH=$deps/usr/bin:$PATH
say "pkg-config: $(command -v pkg-config) $(pkg-config --version 2>/dev/null)"

# ---- 3. the build ----

generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
nccl_args=()
[ -n "$nccl_library" ] && nccl_args=(-DNCCL_INCLUDE_DIR="$nccl_include" -DNCCL_LIBRARY="$nccl_library")
step "configure" check 90 "$buildlog" cmake -S . -B "$build" "${generator[@]}" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CUDA_ARCHITECTURES=90 -DSPMD_BINDINGS=OFF \
  -DSPMD_TEST_CUDA=ON -DSPMD_WITH_CUDA=ON -DPKG_CONFIG_EXECUTABLE="$(command -v pkg-config)" \
  -DSPMD_DLPACK_INCLUDE_DIR="$deps/usr/include" \
  "${nccl_args[@]}"
grep -h "libspmd platforms" "$buildlog" | tail -n 1 | tee -a "$summary"
# SPMD_GPU_CHECK_TARGETS and SPMD_GPU_CHECK_BUILD_ONLY: see the usage above.
targets=()
for t in ${SPMD_GPU_CHECK_TARGETS:-}; do targets+=(--target "$t"); done
step "build (-j$jobs)" check 170 "$buildlog" cmake --build "$build" -j "$jobs" "${targets[@]}"
cp "$build/CMakeCache.txt" "$logs/" 2>/dev/null
if [ "${SPMD_GPU_CHECK_BUILD_ONLY:-0}" != 1 ]; then

# ---- 4. correctness on the cuda platform ----

# keep_ctest_log NAME: CTest's full log of the last run (every test's
# output, passing or not) under NAME.
keep_ctest_log() {
  cp "$build/Testing/Temporary/LastTest.log" "$logs/$1" 2>/dev/null
}

# The GPU's memory in use while the suites run side by side (a suite that
# runs out of it shows here).
timeout 200 nvidia-smi --query-gpu=timestamp,memory.used,memory.total --format=csv,noheader \
  -lms 500 >"$logs/gpu-memory.txt" 2>&1 &
memory_pid=$!
step "suites on cuda (ctest -L cuda -j8)" check 150 "$ctestlog" \
  ctest --test-dir "$build" -L cuda -j8 --output-on-failure
kill "$memory_pid" 2>/dev/null
wait "$memory_pid" 2>/dev/null
say "GPU memory in use during the suites: at most $(awk -F', ' '{sub(/ MiB/, "", $2); if ($2 + 0 > m) m = $2 + 0}
  END {print m + 0}' "$logs/gpu-memory.txt") MiB"
keep_ctest_log LastTest-cuda.log

collective_suites='^(test_collectives|test_persistent_collective|test_collective_paths|spmd_bench_results)\.cuda$'
for path in native nccl; do
  lines=$(wc -l <"$ctestlog")
  if ! step "collectives suites, SPMD_CUDA_COLLECTIVES=$path" check 60 "$ctestlog" \
    env SPMD_CUDA_COLLECTIVES="$path" ctest --test-dir "$build" -L cuda -R "$collective_suites" -j4 \
    --output-on-failure; then
    # Several ranks on one GPU are beyond some NCCL versions: the platform
    # refuses them by name, which is no failure of libspmd's.
    why=$(tail -n +"$((lines + 1))" "$ctestlog" | grep -m 1 -o "NCCL cannot run collectives over.*")
    if [ "$path" = nccl ] && [ -n "$why" ]; then amend_last info "refused: ${why:0:70}"; fi
  fi
  keep_ctest_log "LastTest-collectives-$path.log"
done

# ---- 5. benchmarks ----

cuda_env=(env SPMD_PLATFORM=cuda SPMD_CUDA_DEVICES_PER_GPU=8)
# bench NAME LIMIT FILE CMD...: a benchmark step whose output is kept in
# FILE (under $logs, for the figures) and appended to bench.txt.
bench() {
  local name=$1 limit=$2 file=$logs/$3
  shift 3
  : >"$file"
  step "$name" bench "$limit" "$file" "$@"
  cat "$file" >>"$benchlog"
}
wait "$jax_info_pid" 2>/dev/null
cat "$logs/jax-info.txt" >>"$jaxlog"
say "jax:      $(grep -m 1 '^JAX ' "$logs/jax-info.txt" || echo 'not found (jax.txt says why)')"
# The figures set beside JAX's first, then the other paths and tools.
bench "spmd-gpu-bench" 60 gpu-bench-auto.txt "$build/tools/spmd-gpu-bench" -n 10 -w 3
: >"$logs/jax.txt"
step "JAX, the same work (gpu_bench_jax.py)" bench 45 "$logs/jax.txt" \
  env LD_LIBRARY_PATH="$orig_ld_library_path" python3 tools/gpu_bench_jax.py 10 3
cat "$logs/jax.txt" >>"$jaxlog"
for path in native nccl; do
  bench "spmd-gpu-bench collectives, SPMD_CUDA_COLLECTIVES=$path" 20 "gpu-bench-$path.txt" \
    env SPMD_CUDA_COLLECTIVES="$path" "$build/tools/spmd-gpu-bench" -o collectives -n 20 -w 3
done
# Tiny adds with few queued: the host's cost when the GPU keeps up; then
# where the host's time goes, call by call (SPMD_CUDA_HOST_TIMES).
bench "spmd-gpu-bench dispatch, 16 queued" 10 gpu-bench-few.txt "$build/tools/spmd-gpu-bench" \
  -o dispatch -t 16 -n 20 -w 3
bench "spmd-gpu-bench dispatch, host times" 10 gpu-bench-host-times.txt \
  env SPMD_CUDA_HOST_TIMES=1 "$build/tools/spmd-gpu-bench" -o dispatch -t 1000 -n 5 -w 1
# The sum on one logical device: the kernel without the combining across
# devices that the 8-device figure includes.
bench "spmd-gpu-bench sum, one device" 15 gpu-bench-one.txt "$build/tools/spmd-gpu-bench" \
  -o sum -g 1 -n 10 -w 3
# Its shard_map versions are host callbacks: they need host-mapped blocks.
bench "spmd-ops-bench" 25 spmd-ops-bench.txt "${cuda_env[@]}" SPMD_CALLBACK_MEMORY=mapped \
  "$build/tools/spmd-ops-bench" 3
bench "spmd-bench" 25 spmd-bench.txt "${cuda_env[@]}" "$build/tools/spmd-bench" \
  -b 1M -e 64M -f 8 -n 5 -w 2

fi # SPMD_GPU_CHECK_BUILD_ONLY

# ---- the summary ----

# result KEY FILE: the value of "RESULT KEY value unit" in FILE, or "-".
result() {
  local v
  v=$(awk -v k="$1" '$1 == "RESULT" && $2 == k {print $3; exit}' "$2" 2>/dev/null)
  echo "${v:--}"
}

failed=0
for i in "${!step_names[@]}"; do
  if [ "${step_kinds[i]}" = check ] && [ "${step_results[i]}" != pass ]; then failed=1; fi
done
{
  echo
  echo "## steps"
  printf '%-58s %-6s %-34s %6s\n' step kind result seconds
  for i in "${!step_names[@]}"; do
    printf '%-58s %-6s %-34s %6s\n' "${step_names[i]}" "${step_kinds[i]}" "${step_results[i]}" \
      "${step_seconds[i]}"
  done
  echo "total $(($(now) - start))s of $budget"

  echo
  echo "## figures (libspmd: 8 logical devices on one GPU, or one; JAX: one device)"
  printf '%-22s %12s %12s %12s %12s %12s  %s\n' figure "libspmd" "native" "nccl" "one device" "JAX" goal
  for key in copy_gbs add_gbs add_ratio sum_gbs sum_ratio matmul_tflops cublas_tflops matmul_ratio tiny_add_us \
    all_gather_busbw all_gather_ratio reduce_scatter_busbw reduce_scatter_ratio all_reduce_busbw \
    all_reduce_ratio all_to_all_busbw all_to_all_ratio api_launch_us api_record_us api_wait_us \
    api_alloc_free_us api_query_us; do
    case $key in
      add_ratio | *gather_ratio | *scatter_ratio | all_reduce_ratio | all_to_all_ratio) goal=">= 0.7" ;;
      matmul_ratio) goal=">= 0.8" ;;
      tiny_add_us) goal="<= 10" ;;
      *) goal= ;;
    esac
    printf '%-22s %12s %12s %12s %12s %12s  %s\n' "$key" "$(result "$key" "$logs/gpu-bench-auto.txt")" \
      "$(result "$key" "$logs/gpu-bench-native.txt")" "$(result "$key" "$logs/gpu-bench-nccl.txt")" \
      "$(result "$key" "$logs/gpu-bench-one.txt")" "$(result "$key" "$logs/jax.txt")" "$goal"
  done
  echo "tiny add with 16 queued: $(result tiny_add_us "$logs/gpu-bench-few.txt") us;" \
    "with host times: $(result tiny_add_us "$logs/gpu-bench-host-times.txt") us, where they went:"
  grep -h "^#   " "$logs/gpu-bench-host-times.txt" 2>/dev/null
  echo "(GB/s count bytes read + written; *_ratio of collectives: 2 * devices * busbw / copy;"
  echo " spmd-gpu-bench -h has every definition)"

  echo
  echo "## suites on cuda"
  grep -h -E "tests passed|tests failed out of" "$ctestlog"
  echo "failed or timed out:"
  grep -h -E "^\s+[0-9]+ - .*\((Failed|Timeout|SEGFAULT|Subprocess aborted|Exception|Not Run)" \
    "$ctestlog" | sort -u
  echo "skipped on cuda (with their reasons):"
  grep -h -o "skipped on cuda: .*" "$logs"/LastTest-cuda.log 2>/dev/null | sort | uniq -c
  grep -h -E "^\[  SKIPPED \] [A-Za-z0-9_]+$|^skipped: " "$logs"/LastTest-cuda.log 2>/dev/null |
    sort | uniq -c
  echo "conformance on cuda:"
  grep -h -E "^conformance " "$logs"/LastTest-cuda.log 2>/dev/null
} >>"$summary" 2>&1

# Every file in $OUT under 16 MiB: a long log keeps its head and its end.
for f in "$buildlog" "$ctestlog" "$benchlog" "$jaxlog"; do
  if [ "$(stat -c %s "$f")" -gt $((15 << 20)) ]; then
    { head -c $((2 << 20)) "$f"; echo; echo "[... cut ...]"; tail -c $((12 << 20)) "$f"; } >"$f.cut"
    mv "$f.cut" "$f"
  fi
done
tar -czf "$out/logs.tar.gz" -C "$logs" . 2>/dev/null
if [ "$(stat -c %s "$out/logs.tar.gz")" -gt $((15 << 20)) ]; then
  rm -f "$logs"/LastTest-collectives-*.log
  tar -czf "$out/logs.tar.gz" -C "$logs" .
fi
rm -rf "$logs"

cat "$summary"
if [ "$failed" -ne 0 ]; then
  echo "gpu-check: a correctness step did not pass (summary.txt, ctest.log)"
  exit 1
fi
echo "gpu-check: every correctness step passed"
