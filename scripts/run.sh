#!/usr/bin/env bash
# The main job: set up and build, print the device inventory, then run the quick suite on the CPU
# and every GPU (full training steps for net and resnet18, the data pipeline, the core op set)
# and turn the results into a report. Everything lands in reports/latest/:
#   results.json (Google Benchmark JSON, all repetitions), results.csv, report.md, *.svg, devices.*
# Usage: scripts/run.sh [--full] [torchprobe-bench flags, e.g. --devices cuda:0 --models net --batch-sizes 4]
#   (the caller's flags win: a suite default also given is left out; --threads and --benchmark_repetitions
#   replace TORCHPROBE_THREADS and TORCHPROBE_REPETITIONS)
#   --full                 the full sweep: batch sizes 4,64,256, every training variant, every op shape and dtype, 5 repetitions
#   TORCHPROBE_THREADS     LibTorch intra-op threads for the CPU (default: all cores, $(nproc))
#   TORCHPROBE_REPETITIONS Google Benchmark repetitions (default 3 quick, 5 full)
#   TORCHPROBE_FLAVOUR     debian (Debian's CPU LibTorch) or cuda (pip's CUDA LibTorch); default: cuda where
#                          a CUDA toolkit and an NVIDIA GPU are found, debian otherwise (one line says why)
#   TORCHPROBE_OUT         output directory (default reports/latest)
set -euo pipefail
source "$(dirname "$0")/setup.sh"
source "$(dirname "$0")/suite_args.sh"

full=0
args=()
for arg in "$@"; do
  if [[ "$arg" == --full ]]; then full=1; else args+=("$arg"); fi
done
flavour="${TORCHPROBE_FLAVOUR:-}"
if [[ -z "$flavour" ]]; then
  if [[ -n "$(torchprobe_nvcc)" && -e /dev/nvidiactl ]]; then
    flavour=cuda
  else
    flavour=debian
    [[ -n "$(torchprobe_nvcc)" ]] && tp_log "no NVIDIA GPU here: the CPU suite with Debian's LibTorch (TORCHPROBE_FLAVOUR=cuda to override)"
  fi
fi
torchprobe_setup "$flavour"

threads="${TORCHPROBE_THREADS:-$(nproc)}"
given --threads && threads="$(value --threads)"  # the caller's, for the inventory and OpenMP too
export OMP_NUM_THREADS="$threads"
out_dir="${TORCHPROBE_OUT:-$TORCHPROBE_ROOT/reports/latest}"
mkdir -p "$out_dir"
tp="$TORCHPROBE_BUILD_DIR/src/torchprobe"
# An OpenBLAS older than the CPU falls back to SSE kernels (Debian bookworm's 0.3.21 on Emerald Rapids: its SGEMM
# runs 5x slower): take the kernels the inventory names, unless the caller chose some.
if [[ -z "${OPENBLAS_CORETYPE:-}" ]]; then
  coretype="$("$tp" devices --json | sed -n 's/.*"coretype_advice": "\([A-Za-z0-9]*\)".*/\1/p')"
  if [[ -n "$coretype" ]]; then
    export OPENBLAS_CORETYPE="$coretype"
    tp_log "OpenBLAS chose SSE kernels on this CPU: OPENBLAS_CORETYPE=$coretype for this run"
  fi
fi
"$tp" devices --threads "$threads" | tee "$out_dir/devices.txt"
"$tp" devices --threads "$threads" --json > "$out_dir/devices.json"
echo

if [[ $full == 1 ]]; then
  defaults=(--batch-sizes 4,64,256 --variants full --op-set all)
  repetitions="${TORCHPROBE_REPETITIONS:-5}"
  label="full sweep"
else
  # Quick: a launch-bound and a typical batch, one shape per op; each repetition samples until the noise of its mean
  # is under the default target (1% on the CPU, 0.5% on GPUs) with >= 5 samples and >= 0.1 s, or for 1.5 s at most
  # (docs/measurement.md: the whole quick suite in about a minute on a 2-core VM, every CV under 3%).
  defaults=(--batch-sizes 4,64 --op-set core --min-samples 5 --min-time 0.1 --timeout 1.5)
  repetitions="${TORCHPROBE_REPETITIONS:-3}"
  label="quick suite"
fi
merge_suite_args
tp_log "$label: $repetitions repetitions, $threads threads; results in $out_dir"
start=$(date +%s)
rc=0
"$TORCHPROBE_BUILD_DIR/bench/torchprobe-bench" "${suite[@]}" --benchmark_display_aggregates_only=true \
  --benchmark_out="$out_dir/results.json.partial" --benchmark_out_format=json "${rest[@]+"${rest[@]}"}" > "$out_dir/console.txt" || rc=$?
elapsed=$(( $(date +%s) - start ))
if [[ ! -s "$out_dir/results.json.partial" ]]; then
  tp_log "error: torchprobe-bench wrote no results (exit $rc); its output: $out_dir/console.txt"
  exit $(( rc == 0 ? 1 : rc ))
fi
mv "$out_dir/results.json.partial" "$out_dir/results.json"
echo
# The report is written even when some benchmarks failed: they appear in it with their reason.
"$tp" report "$out_dir/results.json" --out "$out_dir"
tp_log "$label took ${elapsed}s (build excluded); Google Benchmark's table: $out_dir/console.txt"
tp_log "report: $out_dir/report.md, $out_dir/results.csv, charts and results.json"
exit $rc
