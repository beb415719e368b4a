#!/usr/bin/env bash
# Profile training benchmarks under Nsight Systems with CUDA + NVTX + OS-runtime tracing.
# Usage: scripts/profile.sh [torchprobe-bench arguments...]
#   e.g. scripts/profile.sh --devices cuda:0 --models net,resnet18 --batch-sizes 64
# Runs torchprobe-bench --profile (a few samples per benchmark, no statistics). On a CUDA build
# only the measured regions are captured (cudaProfilerStart/Stop; --capture-range=cudaProfilerApi).
# Writes reports/profile/<stamp>.nsys-rep and <stamp>-nvtx.txt (nsys stats, NVTX summary), prints it.
#   TORCHPROBE_FLAVOUR   debian (default) or cuda, as for scripts/run.sh
set -euo pipefail
if ! command -v nsys >/dev/null 2>&1; then
  echo "torchprobe: error: nsys (Nsight Systems) is not on PATH; install NVIDIA's nsight-systems package (CUDA apt repository) or the Nsight Systems installer, then add its bin/ to PATH" >&2
  exit 2
fi
source "$(dirname "$0")/setup.sh"
torchprobe_setup "${TORCHPROBE_FLAVOUR:-debian}"
bench="$TORCHPROBE_BUILD_DIR/bench/torchprobe-bench"
out_dir="$TORCHPROBE_ROOT/reports/profile"
mkdir -p "$out_dir"
stamp="$(date +%Y%m%d-%H%M%S)"
capture=()
if "$TORCHPROBE_BUILD_DIR/src/torchprobe" devices --json | grep -q '"compiled": true'; then
  capture=(--capture-range=cudaProfilerApi --capture-range-end=none)
fi
nsys profile --trace=cuda,nvtx,osrt --force-overwrite=true -o "$out_dir/$stamp" "${capture[@]}" \
  "$bench" --profile --suites train "$@"
nsys stats --report nvtx_sum --format table --output - "$out_dir/$stamp.nsys-rep" | tee "$out_dir/$stamp-nvtx.txt"
tp_log "timeline: $out_dir/$stamp.nsys-rep (open in Nsight Systems); NVTX summary: $out_dir/$stamp-nvtx.txt"
