#!/usr/bin/env bash
# Profile training benchmarks with NVIDIA's profilers, read by the NVTX phase ranges.
# Usage: scripts/profile.sh [torchprobe-bench arguments...]
#   e.g. scripts/profile.sh --devices cuda:0 --models net,resnet18 --batch-sizes 64
# Runs torchprobe-bench --profile (a few samples per benchmark, no statistics). On a CUDA build only the
# measured regions are captured (cudaProfilerStart/Stop).
#   nsys (Nsight Systems, preferred): the timeline with CUDA, NVTX and OS-runtime traces; writes
#        <stamp>.nsys-rep and <stamp>-nvtx.txt (nsys stats' NVTX summary) and prints the summary.
#   ncu (Nsight Compute, where nsys is absent): every kernel of the measured regions, GPU time only (one
#        metric; clocks and caches left as they are), NVTX ranges process-wide where ncu offers it; then per
#        phase range of the torchprobe domain (h2d, forward, loss, backward, optimizer) its kernels and GPU
#        time, each kernel counted in the innermost phase of its NVTX stack. Writes <stamp>.ncu-rep,
#        <stamp>-kernels.csv (every kernel with its NVTX stack), <stamp>-<phase>.csv and <stamp>-nvtx.txt
#        (per phase, and the kernels outside every phase), and prints the latter. Exit 1 if a compute phase has no kernel (the ranges did not reach the profiler;
#        h2d's copy is no kernel). Give it few benchmarks: e.g. --models net --batch-sizes 64 --dtypes fp32
#        --layouts nchw --cudnn off --graphs off (a CUDA-graph step replays as one unit).
#   TORCHPROBE_PROFILER     nsys or ncu (default: nsys if on PATH, else ncu)
#   TORCHPROBE_PROFILE_OUT  output directory (default: reports/profile)
#   TORCHPROBE_NCU_LAUNCH_COUNT  at most this many kernels profiled (default 3000)
#   TORCHPROBE_BUILD_DIR    a build tree (default: the flavour's, TORCHPROBE_FLAVOUR debian or cuda)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
profiler="${TORCHPROBE_PROFILER:-}"
# ncu also where CUDA installs put it without adding it to PATH.
if ! command -v ncu > /dev/null 2>&1; then
  for dir in ${TORCHPROBE_PROFILER_DIRS:-/usr/local/cuda/bin /opt/nvidia/nsight-compute/*}; do
    [[ -x "$dir/ncu" ]] && PATH="$PATH:$dir" && break
  done
fi
if [[ -z "$profiler" ]]; then
  if command -v nsys > /dev/null 2>&1; then profiler=nsys; elif command -v ncu > /dev/null 2>&1; then profiler=ncu; fi
fi
case "$profiler" in
  nsys|ncu)
    command -v "$profiler" > /dev/null 2>&1 || { echo "torchprobe: error: TORCHPROBE_PROFILER=$profiler is not on PATH" >&2; exit 2; } ;;
  "")
    echo "torchprobe: error: neither nsys (Nsight Systems) nor ncu (Nsight Compute) is on PATH; install NVIDIA's nsight-systems or nsight-compute package (CUDA apt repository; the CUDA toolkit ships ncu in its nsight-compute directory), then add its bin/ to PATH" >&2
    exit 2 ;;
  *) echo "torchprobe: error: TORCHPROBE_PROFILER is nsys or ncu, got '$profiler'" >&2; exit 2 ;;
esac
if [[ -n "${TORCHPROBE_BUILD_DIR:-}" ]]; then
  build="$TORCHPROBE_BUILD_DIR"
  TORCHPROBE_ROOT="$(cd "$here/.." && pwd)"
  tp_log() { echo "torchprobe: $*" >&2; }
else
  source "$here/setup.sh"
  torchprobe_setup "${TORCHPROBE_FLAVOUR:-debian}"
  build="$TORCHPROBE_BUILD_DIR"
fi
bench="$build/bench/torchprobe-bench"
out_dir="${TORCHPROBE_PROFILE_OUT:-$TORCHPROBE_ROOT/reports/profile}"
mkdir -p "$out_dir"
# The process id keeps two profiles started in the same second (two CI jobs, two terminals) apart.
stamp="$(date +%Y%m%d-%H%M%S)-$$"
cuda_build=0
# Into a variable first: with pipefail, `grep -q` closing the pipe early could fail the pipeline on a CUDA build.
inventory="$("$build/src/torchprobe" devices --json)"
[[ "$inventory" == *'"compiled": true'* ]] && cuda_build=1

if [[ "$profiler" == nsys ]]; then
  capture=()
  [[ $cuda_build == 1 ]] && capture=(--capture-range=cudaProfilerApi --capture-range-end=none)
  nsys profile --trace=cuda,nvtx,osrt --force-overwrite=true -o "$out_dir/$stamp" "${capture[@]}" \
    "$bench" --profile --suites train "$@"
  nsys stats --report nvtx_sum --format table --output - "$out_dir/$stamp.nsys-rep" | tee "$out_dir/$stamp-nvtx.txt"
  tp_log "timeline: $out_dir/$stamp.nsys-rep (open in Nsight Systems); NVTX summary: $out_dir/$stamp-nvtx.txt"
  exit 0
fi

# ncu: one pass profiling every kernel of the measured region (GPU time only, clocks and caches left as
# they are), exported as ncu's raw page: a row per kernel with its NVTX stack. Each kernel belongs to the
# innermost phase range of the torchprobe domain (h2d, forward, loss, backward, optimizer) in its stack, read
# from that CSV here (ncu's own NVTX filter on --import differs between versions: ncu 2025+ refuses --nvtx
# there). A compute phase with no kernel means the ranges did not reach ncu: exit 1.
[[ $cuda_build == 1 ]] || { echo "torchprobe: error: ncu profiles GPU kernels: $build is not a CUDA build" >&2; exit 2; }
scope=()
# Autograd launches backward kernels from its own thread per device: the phase ranges must be process-wide.
# (ncu's help into a variable first: `ncu --help | grep -q` fails under pipefail when grep closes the pipe early.)
ncu_help="$(ncu --help 2>&1 || true)"
[[ "$ncu_help" == *--nvtx-push-pop-scope* ]] && scope=(--nvtx-push-pop-scope process)
report="$out_dir/$stamp.ncu-rep"
ncu --nvtx "${scope[@]}" --profile-from-start off --clock-control none --cache-control none \
  --metrics gpu__time_duration.sum --launch-count "${TORCHPROBE_NCU_LAUNCH_COUNT:-3000}" --force-overwrite \
  --export "$out_dir/$stamp" "$bench" --profile --suites train "$@"
ncu --import "$report" --csv --page raw --print-units base > "$out_dir/$stamp-kernels.csv"
ncu --import "$report" --csv --print-units base --print-summary per-nvtx > "$out_dir/$stamp-per-nvtx.csv" 2>&1 || true
# The raw page: a header row, a units row, a row per kernel, every field quoted (no field holds '","'). Writes
# <stamp>-<phase>.csv (the header, the units and that phase's kernels) and prints "phase kernels ns" per phase,
# then "none" for the kernels outside every phase range and "all".
per_phase() {
  awk -F'","' -v prefix="$out_dir/$stamp-" '
    function innermost(stack,   last) {
      last = "none"
      while (match(stack, /torchprobe:(h2d|forward|loss|backward|optimizer):/)) {
        last = substr(stack, RSTART + 11, RLENGTH - 12); stack = substr(stack, RSTART + RLENGTH)
      }
      return last
    }
    NR == 1 { for (i = 1; i <= NF; i++) { h = $i; gsub(/"/, "", h); if (h == "gpu__time_duration.sum") t = i; if (h ~ /Push\/Pop_Range/ && !s) s = i } }
    NR <= 2 { head = head $0 "\n"; next }
    { p = innermost(s ? $s : ""); v = t ? $t : "0"; gsub(/[",]/, "", v); n[p]++; ns[p] += v; rows[p] = rows[p] $0 "\n"; all++ }
    END {
      split("h2d forward loss backward optimizer", phases, " ")
      for (k = 1; k <= 5; k++) { p = phases[k]; printf "%s", head rows[p] > (prefix p ".csv"); printf "%s %d %.0f\n", p, n[p], ns[p] }
      printf "none %d %.0f\nall %d\n", n["none"], ns["none"], all
    }' "$out_dir/$stamp-kernels.csv"
}
printf '%-10s %8s %12s\n' phase kernels "GPU ms" > "$out_dir/$stamp-nvtx.txt"
empty=() all=0
while read -r phase kernels ns; do
  if [[ $phase == all ]]; then all=$kernels; continue; fi
  label=$phase; [[ $phase == none ]] && label="(no phase)"
  printf '%-10s %8d %12.3f\n' "$label" "$kernels" "$(awk -v ns="$ns" 'BEGIN { print ns / 1e6 }')" >> "$out_dir/$stamp-nvtx.txt"
  # The host-to-device copy is a memcpy, which ncu does not profile: h2d may hold no kernel.
  (( kernels > 0 )) || [[ $phase == h2d || $phase == none ]] || empty+=("$phase")
done < <(per_phase)
echo "all kernels profiled: $all" >> "$out_dir/$stamp-nvtx.txt"
cat "$out_dir/$stamp-nvtx.txt"
tp_log "report: $report (open in Nsight Compute); every kernel with its NVTX stack: $out_dir/$stamp-kernels.csv; per phase: $out_dir/$stamp-nvtx.txt"
if (( ${#empty[@]} > 0 )); then
  echo "torchprobe: error: of $all kernels profiled, none was inside the range of: ${empty[*]}: the NVTX ranges did not reach ncu (see the NVTX column of $out_dir/$stamp-kernels.csv)" >&2
  exit 1
fi
