#!/usr/bin/env bash
# Downloads the Debian 12 packages a borrowed GPU machine lacks for building
# and testing libspmd (OpenBLAS, SLEEF, CMocka, DLPack, pkgconf; about 13 MB) into
# .gpu-deps/ at the repository root. Run it here, where Debian's archive is
# reachable; .gpu-deps/ travels to the GPU machine with the work tree, and
# tools/gpu-check.sh unpacks it there (that machine has no network).
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(libopenblas0-pthread libopenblas-pthread-dev libopenblas-dev libopenblas0 libgfortran5
  libsleef3 libsleef-dev libcmocka0 libcmocka-dev pkgconf pkgconf-bin libpkgconf3 libdlpack-dev)

rm -rf .gpu-deps
mkdir -p .gpu-deps
cd .gpu-deps
# apt-get download needs the package lists; fetch them once if they are missing.
if ! apt-get download "${packages[@]}"; then
  apt-get update -qq
  apt-get download "${packages[@]}"
fi
n=$(find . -maxdepth 1 -name '*.deb' | wc -l)
if [ "$n" -ne "${#packages[@]}" ]; then
  echo "gpu-deps: expected ${#packages[@]} packages, got $n" >&2
  exit 1
fi
echo "gpu-deps: $n packages, $(du -sh . | cut -f1), in $(pwd)"
