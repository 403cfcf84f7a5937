#!/usr/bin/env bash
# Sets up what is missing, builds libspmd, and runs the tour: the seed
# notebooks' cells on the default CPU platform of 8 virtual devices.
set -euo pipefail
cd "$(dirname "$0")/.."

tools/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$(nproc)" --target spmd-tour
exec build/examples/spmd-tour
