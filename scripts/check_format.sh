#!/usr/bin/env bash
# The formatting check CI runs: every C++ line changed since the commit named in .ci/format-base (the commit
# before .clang-format was adopted) follows .clang-format, with Debian's clang-format 14. Lines nobody has
# touched since keep their old layout, so the check never asks for a mass reformat.
# Usage: scripts/check_format.sh [BASE]   Exit 0 when formatted, 1 with the diff to apply
# (`git clang-format BASE` applies it), 2 when it cannot check (no clang-format, BASE not in this clone).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
source "$root/scripts/setup.sh"
cd "$root"
base="${1:-$(cat .ci/format-base)}"
torchprobe_install_packages clang-format git
if ! git rev-parse -q --verify "$base^{commit}" > /dev/null; then
  tp_log "error: format check: the base commit $base is not in this clone (a shallow clone? fetch it, or pass a BASE)"
  exit 2
fi
out="$(git clang-format --binary clang-format --diff "$base" -- '*.cpp' '*.h' 2>&1)" || true
if grep -q '^diff --git' <<< "$out"; then
  echo "$out"
  tp_log "error: the lines above changed since $base are not formatted as .clang-format says: run git clang-format $base"
  exit 1
fi
tp_log "format: every C++ line changed since ${base:0:10} follows .clang-format"
