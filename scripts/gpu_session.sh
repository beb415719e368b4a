#!/usr/bin/env bash
# Every GPU-dependent check, as named steps grouped into calls that each fit a lent GPU machine's
# 10-minute command limit: inventory, the gpu-labelled tests (also under compute-sanitizer) and the
# rest of the suite on the GPU host, the device and memory diagnostics, an NVTX-filtered profile, the quick suite (CPU and GPUs: the
# hardware comparison), the training-variant sweep with MFU, the op checks, NCCL and data_parallel.
# Needs a build tree of the cuda flavour (scripts/test.sh --flavour cuda builds build-cuda/; on a lent
# machine, the .gpu kit's prebuilt one: see docs/gpu.md).
# Usage: scripts/gpu_session.sh [--group N|--steps A,B,...] [--tar FILE] [--deadline SECONDS] OUT_DIR
#        scripts/gpu_session.sh --list
#   --list        the steps: group, time limit, what each needs and does; runs nothing
#   --group N     the steps of call N (1: checks, 2: training, 3: ops and distributed); default: every step
#   --steps LIST  these steps, in the script's order (e.g. --steps inventory,gpu_tests)
#   --tar FILE    after every step, pack OUT_DIR into FILE (.tar.gz, replaced atomically): one file back
#                 per call, complete up to the last finished step even if the call is cut off
#   --deadline S  seconds this call may take (default 500): a step gets at most what is left minus
#                 20 s for packing; one that cannot start is listed as not run, one cut short as timed out
#   TORCHPROBE_BUILD_DIR  build tree (default: build-cuda, else build)
#   TORCHPROBE_DEVICES    devices of the quick suite (default: all: the CPU beside the GPUs)
#   TORCHPROBE_OP_DEVICES devices of the op checks (default: cuda, every GPU)
# Each step's output is OUT_DIR/<step>.log; OUT_DIR/steps.tsv has one line per step: name, status
# (ok, failed, timed out, not run), exit code, seconds, and why it did not run. A step that needs a
# GPU is "not run" on a host without one, never a pass. Exit: 0 when nothing failed or timed out
# (steps not run are listed), 1 otherwise, 2 for bad arguments.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"

# name|group|limit seconds|needs (gpu, gpus2, any)|what it does
plan=(
  "inventory|1|60|any|nvidia-smi, torchprobe devices (text and JSON), the host's load and the GPU's other processes"
  "gpu_tests|1|180|gpu|ctest -L gpu (every Gpu.* test; an empty selection fails)"
  "diagnose_device|1|90|gpu|diagnose device --scenario all (text and JSON: the raw messages become classifier fixtures)"
  "sanitizer|1|150|gpu|the Gpu.* tests under compute-sanitizer memcheck (caching allocator off, but for the graph and peak-memory tests)"
  "host_tests|1|180|gpu|every other test on this GPU host (their GPU-host branches: the device scenarios, cuda:0 parsing...)"
  "diagnose_memory|1|150|gpu|diagnose memory on cuda:0 for resnet18, then net (JSON): real OOM, largest batch within 2%, recovery"
  "variants_net|2|90|gpu|net: fp32 NCHW x cuDNN autotuning x CUDA graph at batch 4, 64, 256"
  "variants_resnet18|2|180|gpu|resnet18: fp32/bf16/fp16 x NCHW/channels_last (cuDNN autotuning on), and fp32 NCHW with it off, at batch 4, 64, 256, 512 (MFU)"
  "mfu|2|90|gpu|resnet18 at batch 512: fp32/bf16/fp16 x NCHW/channels_last with cuDNN autotuning, 5 repetitions of 0.5 s (the MFU figures, steadier than the sweep's)"
  "ops_gemm|3|120|gpu|matmul 8192 in every dtype: share of the measured peak (each dtype's roofs are measured first)"
  "ops_copy|3|60|gpu|host-device copies of 64 MiB, pinned and pageable, and model.to()"
  "quick|2|150|any|the quick suite on TORCHPROBE_DEVICES: net and resnet18 at batch 4 and 64, data, core ops"
  "isolate_off|2|60|gpu|net training at batch 4 and 64 on the GPUs in one process"
  "isolate_on|2|120|gpu|the same with --isolate (a process and a CUDA context per benchmark): its cost"
  "ops_cold|3|120|gpu|matmul, conv2d, add: hot (ops_hot.json), then with the cache flushed before each call (ops_cold.json)"
  "nccl_allreduce|3|90|gpu|dist allreduce over NCCL, one rank per GPU"
  "nccl_train|3|120|gpu|dist train (net, resnet18) over NCCL, one rank per GPU"
  "nccl_torchrun|3|90|gpu|dist train resnet18 under the machine's torchrun (agent store, NCCL)"
  "profile|3|120|gpu|scripts/profile.sh: net's training step by NVTX phase range under a profiler (nsys, else ncu)"
  "ops_conv|3|150|gpu|every conv2d shape"
  "data_parallel|3|120|gpus2|torch::nn::parallel::data_parallel over every GPU (net, resnet18)"
  "reports|0|60|any|torchprobe report for every results JSON in OUT_DIR (run at the end of every call)"
)
field() { local IFS='|'; read -r -a f <<< "$1"; echo "${f[$2]}"; }

usage() { sed -n '8,9p' "$0" | sed 's/^# //' >&2; exit 2; }
list=0 group="" steps="" tar="" deadline=500
while [[ $# -gt 0 ]]; do
  case "$1" in
    --list) list=1; shift ;;
    --group) group="${2:-}"; shift 2 || usage ;;
    --steps) steps="${2:-}"; shift 2 || usage ;;
    --tar) tar="${2:-}"; shift 2 || usage ;;
    --deadline) deadline="${2:-}"; shift 2 || usage ;;
    -h|--help) sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "torchprobe: error: unknown option $1" >&2; usage ;;
    *) break ;;
  esac
done
if [[ $list == 1 ]]; then
  printf '%-18s %5s %6s  %-5s  %s\n' step group limit needs "what it does"
  for g in 1 2 3 0; do
    total=0
    for entry in "${plan[@]}"; do
      [[ "$(field "$entry" 1)" == "$g" ]] || continue
      printf '%-18s %5s %5ss  %-5s  %s\n' "$(field "$entry" 0)" "$g" "$(field "$entry" 2)" "$(field "$entry" 3)" "$(field "$entry" 4)"
      total=$((total + $(field "$entry" 2)))
    done
    [[ $g == 0 ]] || printf '%-18s %5s %5ss  (limits summed; the call deadline cuts what does not fit)\n' "" "" "$total"
  done
  exit 0
fi
[[ $# -eq 1 ]] || usage
out="$1"
[[ "$deadline" =~ ^[1-9][0-9]*$ ]] || { echo "torchprobe: error: --deadline needs whole seconds, got '$deadline'" >&2; exit 2; }
[[ -z "$group" || "$group" =~ ^[123]$ ]] || { echo "torchprobe: error: --group is 1, 2 or 3, got '$group'" >&2; exit 2; }
[[ -z "$group" || -z "$steps" ]] || { echo "torchprobe: error: --group and --steps exclude each other" >&2; exit 2; }
known=" "; for entry in "${plan[@]}"; do known+="$(field "$entry" 0) "; done
if [[ -n "$steps" ]]; then
  for s in ${steps//,/ }; do
    [[ "$known" == *" $s "* ]] || { echo "torchprobe: error: unknown step '$s' (steps:$known)" >&2; exit 2; }
  done
fi
build="${TORCHPROBE_BUILD_DIR:-}"
if [[ -z "$build" ]]; then
  for candidate in "$root/build-cuda" "$root/build"; do [[ -x "$candidate/src/torchprobe" ]] && build="$candidate" && break; done
fi
if [[ -z "$build" || ! -x "$build/src/torchprobe" ]]; then
  echo "torchprobe: error: no build tree with src/torchprobe (set TORCHPROBE_BUILD_DIR)" >&2
  exit 2
fi
if [[ -n "$tar" ]]; then
  tar_dir="$(dirname "$tar")"
  [[ -d "$tar_dir" && -w "$tar_dir" ]] || { echo "torchprobe: error: --tar: cannot write in $tar_dir" >&2; exit 2; }
  tar="$(cd "$tar_dir" && pwd)/$(basename "$tar")"
fi
mkdir -p "$out" || exit 2
out="$(cd "$out" && pwd)"
export tp="$build/src/torchprobe" bench="$build/bench/torchprobe-bench" build root out
export devices="${TORCHPROBE_DEVICES:-all}" op_devices="${TORCHPROBE_OP_DEVICES:-cuda}"
gpus="$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)"
export gpus="${gpus:-0}"
started=$SECONDS
[[ -f "$out/steps.tsv" ]] || printf 'step\tstatus\texit\tseconds\tnote\n' > "$out/steps.tsv"

# --- the steps (functions run by step_run; their output goes to OUT/<name>.log) ---
json_then_text() { local file="$1"; shift; "$@" --json > "$file" && "$@"; }
run_inventory() {
  uptime; echo
  nvidia-smi --query-gpu=index,name,memory.total,driver_version,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu,utilization.gpu --format=csv
  echo; echo "other processes on the GPUs (a quiet machine has none):"
  nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader
  echo; "$tp" devices --json > "$out/devices.json" && "$tp" devices
}
run_gpu_tests() { (cd "$build" && ctest -L gpu --no-tests=error --output-on-failure --timeout 200); }
# Chromium (browser) and network namespaces (multinode) are not on the lent machines; the rest runs, 8 at a time,
# each with 2 OpenMP threads: with every core per test (LibTorch's default on a 16-core host) 12 tests at once
# drove the load to 77 and three unit tests past 100 s (H100, 2026-11-27).
run_host_tests() {
  (cd "$build" && OMP_NUM_THREADS=2 ctest -LE 'gpu|browser|multinode' --no-tests=error --output-on-failure -j 8 --timeout 300)
}
run_diagnose_device() { json_then_text "$out/diagnose_device.json" "$tp" diagnose device --scenario all; }
# Once, as JSON (it holds all the text shows; the trials go to the log as they run): the probe fills the GPU.
# --max-batch 2^22: net needs ~0.1 MB a sample, so the default 2^20 fits in an H200's 141 GB without an OOM.
run_diagnose_memory() {
  # resnet18 first: its search ends in seconds; net's reaches millions of images. A stop keeps the finished probes.
  "$tp" diagnose memory --devices cuda:0 --models resnet18,net --max-batch 4194304 --json > "$out/diagnose_memory.json"
}
run_sanitizer() {
  local sanitizer
  sanitizer="$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null | head -1)"
  [[ -n "$sanitizer" ]] || { echo "compute-sanitizer is not on PATH nor in /usr/local/cuda/bin"; return 77; }
  # Without the caching allocator every tensor is its own cudaMalloc, so memcheck sees its bounds. That path
  # refuses CUDA-graph capture (it calls cudaMalloc while capturing, on purpose) and keeps no allocator
  # statistics, so the graph tests and the peak-memory test run with the cache on, in a second pass.
  # --report-api-errors no: memcheck counts as errors the CUDA API calls that libraries fail on purpose and
  # handle (NCCL asks for kernels built for other GPUs at init: 8 such errors on an H200, 2026-11-27); the
  # memory-access checks and the tests' own verdicts stay. Run it alone: a step that fills the GPU
  # (diagnose_device's out-of-memory scenarios, diagnose_memory) beside it can run its tests out of memory
  # (likely what failed Gpu.Bf16AndCudnnAutotuningMatchFp32 on an H200, 2026-11-27, with diagnose_device beside it).
  local cached='Gpu.CudaGraphReplayComputesTheEagerSteps:Gpu.GraphedFp16ChannelsLastStepMatchesEager:Gpu.EventsTimeQueuedWorkAndPeakMemoryIsTracked'
  local memcheck=("$sanitizer" --tool memcheck --report-api-errors no --error-exitcode 99 --print-limit 50)
  local rc=0
  echo "== memcheck, caching allocator off"
  PYTORCH_NO_CUDA_MEMORY_CACHING=1 "${memcheck[@]}" "$build/tests/gpu_test" --gtest_filter="Gpu.*:-$cached" || rc=$?
  echo "== memcheck, caching allocator on: $cached"
  "${memcheck[@]}" "$build/tests/gpu_test" --gtest_filter="$cached" || rc=$?
  return $rc
}
run_profile() {
  TORCHPROBE_PROFILE_OUT="$out/profile" TORCHPROBE_BUILD_DIR="$build" "$root/scripts/profile.sh" \
    --devices cuda:0 --models net --batch-sizes 64 --dtypes fp32 --layouts nchw --cudnn off --graphs off
}
# TORCHPROBE_BENCH_ARGS: more torchprobe-bench flags for every benchmark step (the tests inject roofs with it).
bench_json() {
  local name="$1" extra=(); shift
  read -r -a extra <<< "${TORCHPROBE_BENCH_ARGS:-}"
  "$bench" "$@" "${extra[@]}" --benchmark_out="$out/$name.json" --benchmark_out_format=json
}
run_quick() { bench_json quick --devices "$devices" --batch-sizes 4,64 --op-set core --benchmark_repetitions=3 --benchmark_min_time=0.1; }
run_isolate_off() { bench_json isolate_off --devices cuda --suites train --models net --batch-sizes 4,64; }
run_isolate_on() { bench_json isolate_on --isolate --devices cuda --suites train --models net --batch-sizes 4,64; }
run_variants_net() {
  bench_json variants_net --devices cuda --suites train --models net --batch-sizes 4,64,256 --dtypes fp32 --layouts nchw \
    --cudnn off,on --graphs off,on --benchmark_repetitions=3 --benchmark_min_time=0.1
}
run_variants_resnet18() {
  bench_json variants_resnet18 --devices cuda --suites train --models resnet18 --batch-sizes 4,64,256,512 \
    --dtypes fp32,bf16,fp16 --layouts nchw,cl --cudnn on --graphs off --benchmark_repetitions=3 --benchmark_min_time=0.1 &&
    bench_json variants_resnet18_cudnn_off --devices cuda --suites train --models resnet18 --batch-sizes 4,64,256,512 \
      --dtypes fp32 --layouts nchw --cudnn off --graphs off --benchmark_repetitions=3 --benchmark_min_time=0.1
}
# Sized for a lent machine's minutes: one 8192 GEMM per dtype (the issue's figure; each dtype's roofs cost seconds
# first) and the 64 MiB host copies (pinned against pageable); the full sweeps are torchprobe-bench's --op-set all.
run_mfu() {
  bench_json mfu --devices cuda --suites train --models resnet18 --batch-sizes 512 --dtypes fp32,bf16,fp16 --layouts nchw,cl \
    --cudnn on --graphs off --benchmark_repetitions=5 --benchmark_min_time=0.5
}
run_ops_gemm() {
  bench_json ops_gemm --devices "$op_devices" --suites op --op-set all --ops matmul --benchmark_repetitions=3 \
    --benchmark_filter='/n:8192/'
}
run_ops_copy() {
  bench_json ops_copy --devices "$op_devices" --suites op --op-set all --ops copy,model_to --benchmark_repetitions=3 \
    --benchmark_filter='kind:(h2d|d2h)(_pinned)?/mib:64/|model_to'
}
run_ops_cold() {
  bench_json ops_hot --devices "$op_devices" --suites op --op-set core --ops matmul,conv2d,add --benchmark_repetitions=3 &&
    bench_json ops_cold --devices "$op_devices" --suites op --op-set core --ops matmul,conv2d,add --cold --benchmark_repetitions=3
}
run_ops_conv() { bench_json ops_conv --devices "$op_devices" --suites op --op-set all --ops conv2d --benchmark_min_time=0.1; }
run_nccl_allreduce() { "$root/scripts/launch.sh" "$gpus" "$tp" dist allreduce --device cuda --out "$out/nccl_allreduce.json"; }
run_nccl_train() {
  local model rc=0
  for model in net resnet18; do
    "$root/scripts/launch.sh" "$gpus" "$tp" dist train --device cuda --model "$model" --batch 128 --steps 30 --warmup 5 \
      --out "$out/nccl_train_$model.json" || rc=$?
    (( rc == 130 )) && break  # stopped by the time limit: the next model would be cut short too
  done
  return $rc
}
run_nccl_torchrun() {
  command -v torchrun > /dev/null || { echo "no torchrun on PATH"; return 77; }
  PYTHONWARNINGS=ignore torchrun --nproc-per-node="$gpus" --no-python "$tp" dist train --device cuda --model resnet18 \
    --batch 128 --steps 30 --warmup 5 --out "$out/nccl_torchrun_resnet18.json"
}
run_data_parallel() {
  local model rc=0
  for model in net resnet18; do
    "$tp" dist dataparallel --model "$model" --batch 128 --steps 30 --warmup 5 --threads "$gpus" \
      --out "$out/data_parallel_$model.json" || rc=$?
    (( rc == 130 )) && break
  done
  return $rc
}
run_reports() {
  local json name rc=0
  for json in "$out"/*.json; do
    [[ -e "$json" ]] || continue
    name="$(basename "$json" .json)"
    case "$name" in devices|diagnose_device|diagnose_memory) continue ;; esac
    echo "== $name"
    "$tp" report "$json" --out "$out/report_$name" || rc=$?
  done
  return $rc
}
export -f json_then_text bench_json run_inventory run_gpu_tests run_host_tests run_diagnose_device run_diagnose_memory run_sanitizer \
  run_profile run_quick run_isolate_off run_isolate_on run_variants_net run_variants_resnet18 run_mfu run_ops_gemm run_ops_copy \
  run_ops_cold run_ops_conv run_nccl_allreduce run_nccl_train run_nccl_torchrun run_data_parallel run_reports

# --- the runner ---
failed=0 not_run=()
pack() {
  [[ -n "$tar" ]] || return 0
  tar -czf "$tar.tmp" -C "$(dirname "$out")" "$(basename "$out")" && mv -f "$tar.tmp" "$tar"
}
record() {  # record NAME STATUS EXIT SECONDS NOTE
  printf '%s\t%s\t%s\t%s\t%s\n' "$@" >> "$out/steps.tsv"
  printf '%-18s %-9s exit %-3s %4ss  %s\n' "$@"
}
step_run() {  # step_run ENTRY
  local name needs limit left rc=0 start status note=""
  name="$(field "$1" 0)" limit="$(field "$1" 2)" needs="$(field "$1" 3)"
  if [[ "$needs" == gpu && "$gpus" -lt 1 ]]; then
    record "$name" "not run" - 0 "no GPU on this host (nvidia-smi lists none)"; not_run+=("$name"); return
  fi
  if [[ "$needs" == gpus2 && "$gpus" -lt 2 ]]; then
    record "$name" "not run" - 0 "needs 2 GPUs or more; this host has $gpus"; not_run+=("$name"); return
  fi
  left=$((deadline - (SECONDS - started) - 20))
  (( left < limit )) && limit=$left
  if (( limit < 15 )); then
    record "$name" "not run" - 0 "no time left in this call (--deadline $deadline)"; not_run+=("$name"); return
  fi
  start=$SECONDS
  # SIGINT first: the benchmarks finish their sample, write their files and exit 130; KILL 15 s later.
  timeout --signal=INT --kill-after=15 "$limit" bash -c "run_$name" > "$out/$name.log" 2>&1 || rc=$?
  case $rc in
    0) status=ok ;;
    124|137) status="timed out"; note="stopped after its ${limit} s limit; what it finished is kept"; failed=1 ;;
    77) status="not run"; note="$(tail -1 "$out/$name.log")"; not_run+=("$name") ;;
    *) status=failed; note="see $name.log"; failed=1 ;;
  esac
  record "$name" "$status" "$rc" $((SECONDS - start)) "$note"
  pack
}
selected=()
for entry in "${plan[@]}"; do
  name="$(field "$entry" 0)" g="$(field "$entry" 1)"
  [[ "$name" == reports ]] && continue
  if [[ -n "$steps" ]]; then [[ ",$steps," == *",$name,"* ]] || continue
  elif [[ -n "$group" ]]; then [[ "$g" == "$group" ]] || continue
  fi
  selected+=("$entry")
done
for entry in "${plan[@]}"; do [[ "$(field "$entry" 0)" == reports ]] && reports_entry="$entry"; done
echo "gpu_session: $(uname -n), $gpus GPU(s), build $build, deadline ${deadline} s, out $out"
for entry in "${selected[@]}"; do step_run "$entry"; done
# Reports for whatever JSON exists, unless only other steps were asked for by name.
if [[ -z "$steps" || ",$steps," == *",reports,"* ]]; then step_run "$reports_entry"; fi
pack
echo
column -t -s $'\t' "$out/steps.tsv" 2>/dev/null || cat "$out/steps.tsv"
(( ${#not_run[@]} == 0 )) || echo "not run: ${not_run[*]}"
[[ -z "$tar" ]] || echo "packed: $tar ($(du -h "$tar" | cut -f1))"
exit $failed
