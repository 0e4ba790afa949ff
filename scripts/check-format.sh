#!/usr/bin/env bash
#===- scripts/check-format.sh - every C++ file is clang-format clean -----===#
#
# Checks every tracked .cpp / .h file against .clang-format with
# clang-format 14 (Debian 12's; other versions format differently, so the
# version is pinned). Prints the offending lines and exits 1 if a file is
# not formatted; exits 77 (a skipped test) without git, a git checkout or
# clang-format 14. To format: scripts/check-format.sh --fix
#
#===----------------------------------------------------------------------===#
set -euo pipefail
cd "$(dirname "$0")/.."

CF=""
for c in clang-format-14 clang-format; do
  if command -v "$c" >/dev/null && "$c" --version | grep -q "version 14\."; then
    CF=$c
    break
  fi
done
if [ -z "$CF" ]; then
  echo "check-format: skipped: clang-format 14 not found (scripts/setup.sh installs it)"
  exit 77
fi
if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  echo "check-format: skipped: not a git checkout"
  exit 77
fi

mapfile -t files < <(git ls-files '*.cpp' '*.h')
if [ "${1:-}" = "--fix" ]; then
  "$CF" -i "${files[@]}"
  echo "check-format: formatted ${#files[@]} files"
  exit 0
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! "$CF" --dry-run -Werror "${files[@]}" 2>"$log"; then
  grep "error:" "$log" | head -40
  n=$(grep "error:" "$log" | cut -d: -f1 | sort -u | wc -l)
  echo "check-format: $n file(s) not clang-format clean; run scripts/check-format.sh --fix"
  exit 1
fi
echo "check-format: ${#files[@]} files clean ($CF)"
