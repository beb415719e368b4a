#!/usr/bin/env bash
# The tests: set up, build (Release) and run every CTest suite, for each build flavour:
#   debian  Debian's LibTorch 1.13, CPU only (build/)
#   cuda    the CUDA-enabled LibTorch of the pinned PyTorch wheel (build-cuda/): compiles every
#           CUDA code path and runs the CPU tests against it; gpu tests run where a GPU exists
# Usage: scripts/test.sh [--flavour debian|cuda|all] [ctest arguments...]
#   default: all (also TORCHPROBE_FLAVOUR=...). Fails if any flavour fails to build or pass.
#   e.g.  scripts/test.sh --flavour cuda -L gpu
set -euo pipefail
flavour="${TORCHPROBE_FLAVOUR:-all}"
if [[ "${1:-}" == --flavour ]]; then flavour="${2:?--flavour needs debian, cuda or all}"; shift 2; fi
case "$flavour" in
  all) flavours=(debian cuda) ;;
  debian|cuda) flavours=("$flavour") ;;
  *) echo "torchprobe: error: unknown flavour '$flavour' (debian, cuda or all)" >&2; exit 2 ;;
esac
here="$(dirname "$0")"
failed=()
for f in "${flavours[@]}"; do
  echo "=== flavour: $f"
  # Each flavour in its own shell, so one's set-up (PATH, build dir) cannot leak into the other.
  if ! bash -c 'set -euo pipefail; source "$1/setup.sh"; torchprobe_setup "$2"; cd "$TORCHPROBE_BUILD_DIR";
                shift 2; ctest --output-on-failure -j "$(nproc)" "$@"' _ "$here" "$f" "$@"; then
    failed+=("$f")
  fi
done
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "torchprobe: error: tests failed for flavour(s): ${failed[*]}" >&2
  exit 1
fi
echo "torchprobe: all tests passed for flavour(s): ${flavours[*]}"
