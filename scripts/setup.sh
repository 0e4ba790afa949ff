#!/usr/bin/env bash
#===- scripts/setup.sh - install what pipeopt needs on Debian 12 ----------===#
#
# Installs the toolchain (LLVM/MLIR 22 from Debian's bookworm(-security)
# suites), build tools, GoogleTest, Google Benchmark, OpenMPI and
# nlohmann-json, and clang 16 with its libFuzzer/sanitizer runtime for the
# fuzz targets (fuzz/, cmake/PipeoptFuzz.cmake; clang 14 cannot compile the
# sources), and clang-format 14 (the version the format check pins,
# scripts/check-format.sh), and what the Python package needs (python3-dev
# and pybind11 to build it, NumPy and pytest to test it). Idempotent: does
# nothing when everything is present.
#
# The Python package is built for the `python3` first on PATH. When that is
# not Debian's (pyenv, a virtual environment), NumPy and pytest are
# installed into it with pip, once.
#
#===----------------------------------------------------------------------===#
set -euo pipefail

PKGS=(llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools
      cmake ninja-build g++ python3 libzip-dev
      libgtest-dev libgmock-dev libbenchmark-dev libopenblas-dev
      libopenmpi-dev openmpi-bin nlohmann-json3-dev
      clang-16 libclang-rt-16-dev clang-format-14
      python3-dev pybind11-dev python3-numpy python3-pytest)

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$p")
done
# NumPy and pytest for the python3 on PATH (Debian's has them from the
# packages above).
python_packages() {
  if ! python3 -c 'import numpy, pytest' 2>/dev/null; then
    echo "setup: installing numpy and pytest for $(command -v python3) (pip)"
    python3 -m pip install --quiet numpy pytest
  fi
}

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all packages present"
  python_packages
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "setup: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  SUDO=sudo
fi
echo "setup: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
python_packages
