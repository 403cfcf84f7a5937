#!/usr/bin/env bash
# Runs spmd-ops-bench and, where JAX is installed (the conformance virtual
# environment, or the python3 on PATH), the same work in JAX on 8 CPU
# devices, one after the other in the same sitting.
# usage: tools/ops-bench-vs-jax.sh [BUILD_DIR] [ITERS]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
iters=${2:-10}
echo "== libspmd =="
"$build/tools/spmd-ops-bench" "$iters"
python=python3
[ -x .venv-conformance/bin/python ] && python=.venv-conformance/bin/python
if "$python" -c "import jax" 2>/dev/null; then
  echo "== JAX $("$python" -c 'import jax; print(jax.__version__)') =="
  XLA_FLAGS=--xla_force_host_platform_device_count=8 "$python" tools/ops_bench_jax.py "$iters" 2>&1 |
    grep -v -i warning
else
  echo "== JAX: not installed here (conformance/setup installs it) =="
fi
