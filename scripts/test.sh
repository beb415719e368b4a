#!/usr/bin/env bash
# The tests: set up, build (Release) and run every CTest suite, for each build flavour:
#   light   layer 0 alone, no LibTorch: explain, compare, report, history and their tests (build-light/)
#   debian  Debian's LibTorch 1.13, CPU only (build/)
#   cuda    the CUDA-enabled LibTorch of the pinned PyTorch wheel (build-cuda/): compiles every
#           CUDA code path and runs the CPU tests against it; gpu tests run where a GPU exists
#   asan    the debian flavour under AddressSanitizer + UBSan (clang), plus 60 s of each libFuzzer
#           target (build-asan/); tests/sanitizers/ holds the options and the justified suppressions
# Usage: scripts/test.sh [--flavour auto|all|ci|light|debian|cuda|asan] [--list-flavours] [ctest arguments...]
#   auto (default; also TORCHPROBE_FLAVOUR): every flavour this host can build: light, cuda where a CUDA
#        toolkit is found (CUDA_HOME, default /usr/local/cuda; otherwise one line says why it is
#        skipped), then debian. all: light, cuda, debian and asan; a missing toolkit is an error. ci (what CI
#        runs): light, cuda and asan, which covers debian's LibTorch 1.13 (scripts/setup.sh says what it leaves).
#        cuda comes before debian and asan: its venv's torchrun serves every flavour's launcher tests.
#   --list-flavours: print the flavours that would run (and why one is skipped), build nothing.
#   e.g.  scripts/test.sh --flavour cuda -L gpu
set -euo pipefail
here="$(dirname "$0")"
source "$here/setup.sh"
flavour="${TORCHPROBE_FLAVOUR:-auto}"
list_only=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --flavour) flavour="${2:?--flavour needs auto, all, ci, light, debian, cuda or asan}"; shift 2 ;;
    --list-flavours) list_only=1; shift ;;
    *) break ;;
  esac
done
mapfile -t flavours < <(torchprobe_flavours "$flavour") || exit 2
[[ ${#flavours[@]} -gt 0 ]] || exit 2
if [[ $list_only == 1 ]]; then
  printf '%s\n' "${flavours[@]}"
  exit 0
fi
# The launcher tests of every flavour use the pinned PyTorch's torchrun from the cuda flavour's venv (Debian's
# own is broken); TORCHPROBE_TORCHRUN set by the caller wins.
cuda_torchrun="${TORCHPROBE_CUDA_BUILD_DIR:-$TORCHPROBE_ROOT/build-cuda}/torch-venv/bin/torchrun"
# With the light flavour in this run, the debian and cuda flavours leave out the layer-0 unit tests: light builds
# and runs the same sources with the same compiler (asan keeps them, under its sanitizers). About a minute of
# build and test time each.
light_in_run=0
for f in "${flavours[@]}"; do [[ $f == light ]] && light_in_run=1; done
failed=()
for f in "${flavours[@]}"; do
  [[ -z "${TORCHPROBE_TORCHRUN:-}" && -x "$cuda_torchrun" ]] && export TORCHPROBE_TORCHRUN="$cuda_torchrun"
  layer0_tests=ON
  [[ $light_in_run == 1 && ($f == debian || $f == cuda) ]] && layer0_tests=OFF
  export TORCHPROBE_LAYER0_UNIT_TESTS="$layer0_tests"
  echo "=== flavour: $f"
  started=$SECONDS
  # Each flavour in its own shell, so one's set-up (PATH, build dir) cannot leak into the other.
  # --no-tests=error: a selection (-L gpu, -R ...) that matches nothing is a failure, not a pass.
  # Where the time goes (set-up and build, then tests) is said at the end of each flavour: CI's budget.
  if ! bash -c 'set -euo pipefail; source "$1/setup.sh"; started=$SECONDS; torchprobe_setup "$2";
                tp_log "flavour $2: set-up and build took $((SECONDS - started)) s"; cd "$TORCHPROBE_BUILD_DIR";
                shift 2; ctest --output-on-failure --no-tests=error -j "$(nproc)" "$@"' _ "$here" "$f" "$@"; then
    failed+=("$f")
  fi
  tp_log "flavour $f took $((SECONDS - started)) s in all"
done
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "torchprobe: error: tests failed for flavour(s): ${failed[*]}" >&2
  exit 1
fi
echo "torchprobe: all tests passed for flavour(s): ${flavours[*]}"
