#!/usr/bin/env bash
# Installs the Debian packages libspmd needs to build and test, when missing,
# then the Python packages of the Julia binding's static checks (a virtual
# environment, .venv-bindings). As root it runs apt-get; otherwise it prints
# the apt-get line and stops.
set -euo pipefail

# libopenblas-dev and libsleef-dev: matrix products and vector math of the ops.
# clang and libclang-rt-14-dev (libclang_rt.fuzzer): the libFuzzer targets.
# swig, golang-go, python3-venv: the bindings (SWIG's Go module and XML
# parse, the Go toolchain, the tree-sitter environment of the Julia checks).
# libopenmpi-dev and openmpi-bin: the MPI plugin of runtimes over several
# processes, and mpirun for its tests. libdlpack-dev: DLPack's header
# (spmd/dlpack.h). libdnnl-dev: oneDNN, whose sgemm runs the float32
# products; ocl-icd-opencl-dev: OpenCL's headers, which Debian's oneDNN
# CMake package asks for (only recommended by libdnnl-dev, so
# --no-install-recommends would leave it out).
packages=(cmake make g++ gcc pkg-config libcmocka-dev libopenblas-dev libsleef-dev abigail-tools binutils python3
          clang libclang-rt-14-dev swig golang-go python3-venv libopenmpi-dev openmpi-bin libdlpack-dev libdnnl-dev ocl-icd-opencl-dev)
# Rust: Debian's cargo unless a toolchain (rustup's, say) is already on PATH.
command -v cargo >/dev/null || packages+=(cargo)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  :
elif [ "$(id -u)" -eq 0 ]; then
  echo "Installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "libspmd needs these Debian packages. Install them as root, then run this again:" >&2
  echo "  sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi

# The Julia binding's static checks parse Julia with tree-sitter (PyPI).
bindings/julia/setup
