#!/usr/bin/env bash
#===- dev.sh - the README's two commands, with nothing but bash and git ---===#
#
#   ./dev.sh demo   install missing packages, build, run the main job on a
#                   bundled example (scripts/demo.sh)
#   ./dev.sh test   install missing packages, build, run every test; ends
#                   with ctest's summary (this is what CI runs)
#   ./dev.sh build  install missing packages and build only
#
# Environment: BUILD_DIR (default build), JOBS (default: number of CPUs).
#
#===----------------------------------------------------------------------===#
set -euo pipefail
cd "$(dirname "$0")"
BUILD_DIR=${BUILD_DIR:-build}
JOBS=${JOBS:-$(nproc)}

build() {
  bash scripts/setup.sh
  if [ ! -f "$BUILD_DIR/build.ninja" ]; then
    cmake -G Ninja -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release
  fi
  cmake --build "$BUILD_DIR" -j "$JOBS"
}

case "${1:-}" in
  demo)
    build
    bash scripts/demo.sh "$BUILD_DIR"
    ;;
  test)
    build
    cd "$BUILD_DIR"
    ctest --output-on-failure -j "$JOBS"
    ;;
  build)
    build
    ;;
  *)
    echo "usage: ./dev.sh demo|test|build" >&2
    exit 2
    ;;
esac
