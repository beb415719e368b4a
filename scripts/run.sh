#!/usr/bin/env bash
# The main job: set up, build, print the device inventory, then time full CIFAR-10 training
# steps (and the data pipeline) on the CPU and every GPU. Results: reports/latest/train_step.json.
# Extra arguments go to torchprobe-bench, e.g.  scripts/run.sh --models net --batch-sizes 64
#   TORCHPROBE_THREADS   LibTorch intra-op threads for the CPU (default: all cores, $(nproc))
#   TORCHPROBE_REPETITIONS  Google Benchmark repetitions (default 3; median and CV are reported)
#   TORCHPROBE_FLAVOUR   debian (default: Debian's CPU LibTorch) or cuda (pip's CUDA LibTorch, for GPU hosts)
set -euo pipefail
source "$(dirname "$0")/setup.sh"
torchprobe_setup "${TORCHPROBE_FLAVOUR:-debian}"

threads="${TORCHPROBE_THREADS:-$(nproc)}"
export OMP_NUM_THREADS="$threads"
out_dir="$TORCHPROBE_ROOT/reports/latest"
mkdir -p "$out_dir"
"$TORCHPROBE_BUILD_DIR/src/torchprobe" devices --threads "$threads" | tee "$out_dir/devices.txt"
"$TORCHPROBE_BUILD_DIR/src/torchprobe" devices --threads "$threads" --json > "$out_dir/devices.json"
echo
"$TORCHPROBE_BUILD_DIR/bench/torchprobe-bench" --threads "$threads" \
  --benchmark_repetitions="${TORCHPROBE_REPETITIONS:-3}" --benchmark_display_aggregates_only=true \
  --benchmark_out="$out_dir/train_step.json" --benchmark_out_format=json "$@"
tp_log "results: $out_dir/train_step.json (all repetitions), devices: $out_dir/devices.json"
