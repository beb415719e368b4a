#!/usr/bin/env bash
# Every GPU-dependent check in one call on a GPU host: inventory, the gpu-labelled tests, the device
# and memory diagnostics, the quick suite, the training-variant sweep, the op suite's GPU checks and
# the NCCL / data_parallel runs, each written to OUT_DIR with a report. Needs an existing build tree
# of the cuda flavour (scripts/test.sh --flavour cuda builds build-cuda/).
# Usage: scripts/gpu_session.sh OUT_DIR
#   TORCHPROBE_BUILD_DIR  build tree (default: build-cuda, else build)
#   TORCHPROBE_DEVICES    devices for the benchmarks (default: all)
#   TORCHPROBE_GPU_DEVICES devices for the training-variant sweep (default: cuda, every GPU)
# Steps that fail are recorded in OUT_DIR/steps.txt and the rest still runs; exit 1 if any failed.
set -uo pipefail
out="${1:?usage: scripts/gpu_session.sh OUT_DIR}"
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${TORCHPROBE_BUILD_DIR:-}"
if [[ -z "$build" ]]; then
  for candidate in "$root/build-cuda" "$root/build"; do [[ -x "$candidate/src/torchprobe" ]] && build="$candidate" && break; done
fi
if [[ -z "$build" || ! -x "$build/src/torchprobe" ]]; then
  echo "torchprobe: error: no build tree with src/torchprobe (set TORCHPROBE_BUILD_DIR)" >&2
  exit 2
fi
devices="${TORCHPROBE_DEVICES:-all}"
mkdir -p "$out"
tp="$build/src/torchprobe" bench="$build/bench/torchprobe-bench"
failed=0
step() {  # step NAME COMMAND...: runs it with its output in OUT/NAME.log and records the exit code
  local name="$1"; shift
  local start=$SECONDS rc=0
  "$@" > "$out/$name.log" 2>&1 || rc=$?
  printf '%-22s exit %d  %4ds  %s\n' "$name" "$rc" $((SECONDS - start)) "$*" | tee -a "$out/steps.txt"
  [[ $rc == 0 ]] || failed=1
}

# Helpers run by step (functions, not sh -c strings: paths may hold quotes or spaces).
to_file() { local file="$1"; shift; "$@" > "$file"; }
json_then_text() { local file="$1"; shift; "$@" --json > "$file" && "$@"; }
gpu_tests() { (cd "$build" && ctest -L gpu --no-tests=error --output-on-failure); }

step devices "$tp" devices
step devices_json to_file "$out/devices.json" "$tp" devices --json
step gpu_tests gpu_tests
step diagnose_device json_then_text "$out/diagnose_device.json" "$tp" diagnose device
step diagnose_memory json_then_text "$out/diagnose_memory.json" "$tp" diagnose memory --devices "$devices"
# The quick suite: training steps (net, resnet18 at batch 4 and 64), data, the core op set.
step quick "$bench" --devices "$devices" --batch-sizes 4,64 --op-set core --benchmark_repetitions=3 \
  --benchmark_min_time=0.2 --benchmark_out="$out/quick.json" --benchmark_out_format=json
# The cost of --isolate on the GPUs (a child process, and a CUDA context, per benchmark): the same
# training benchmarks in one process and isolated; the steps' wall times in steps.txt give the cost per
# benchmark (on the 2-vCPU CPU host: ~0.55 s), which decides whether --isolate becomes the GPU default.
step isolate_off "$bench" --devices "${TORCHPROBE_GPU_DEVICES:-cuda}" --suites train --models net --batch-sizes 4,64 \
  --benchmark_out="$out/isolate_off.json" --benchmark_out_format=json
step isolate_on "$bench" --isolate --devices "${TORCHPROBE_GPU_DEVICES:-cuda}" --suites train --models net --batch-sizes 4,64 \
  --benchmark_out="$out/isolate_on.json" --benchmark_out_format=json
# Training-step variants: every precision x layout x cuDNN autotuning x CUDA graph on the GPUs,
# at the launch-bound batch 4 (graph target: >= 3x eager for net) and batch 256 (bf16 + channels_last vs fp32).
step variants "$bench" --devices "${TORCHPROBE_GPU_DEVICES:-cuda}" --suites train --batch-sizes 4,256 --variants full \
  --benchmark_repetitions=3 --benchmark_min_time=0.2 --benchmark_out="$out/variants.json" --benchmark_out_format=json
# Op checks: large GEMMs per dtype (share of the measured peak), pinned vs pageable copies, cold mode.
step ops_gemm "$bench" --devices "$devices" --suites op --op-set all --ops matmul --benchmark_repetitions=3 \
  --benchmark_filter='n:(4096|8192)/' --benchmark_out="$out/ops_gemm.json" --benchmark_out_format=json
step ops_copy "$bench" --devices "$devices" --suites op --op-set all --ops copy,model_to --benchmark_repetitions=3 \
  --benchmark_out="$out/ops_copy.json" --benchmark_out_format=json
step ops_cold "$bench" --devices "$devices" --suites op --op-set core --ops matmul,conv2d,add --cold \
  --benchmark_repetitions=3 --benchmark_out="$out/ops_cold.json" --benchmark_out_format=json
step ops_full_conv "$bench" --devices "$devices" --suites op --op-set all --ops conv2d --benchmark_min_time=0.1 \
  --benchmark_out="$out/ops_conv.json" --benchmark_out_format=json
# Distributed: NCCL all-reduce sweep and data-parallel steps with one rank per GPU, and
# torch::nn::parallel::data_parallel in one process when there are two GPUs or more. JSON under OUT/dist/.
gpus="$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)"; gpus="${gpus:-0}"
if (( gpus > 0 )); then
  mkdir -p "$out/dist"
  step nccl_allreduce "$root/scripts/launch.sh" "$gpus" "$tp" dist allreduce --device cuda --out "$out/dist/nccl_allreduce.json"
  # The same under the machine's own torchrun (its agent store, NCCL on cuda:LOCAL_RANK), where it has one.
  if command -v torchrun > /dev/null; then
    step nccl_torchrun_train env PYTHONWARNINGS=ignore torchrun --nproc-per-node="$gpus" --no-python "$tp" dist train \
      --device cuda --model resnet18 --batch 128 --steps 30 --warmup 5 --out "$out/dist/nccl_torchrun_train_resnet18.json"
  fi
  for model in net resnet18; do
    step "nccl_train_$model" "$root/scripts/launch.sh" "$gpus" "$tp" dist train --device cuda --model "$model" --batch 128 \
      --steps 30 --warmup 5 --out "$out/dist/nccl_train_$model.json"
    if (( gpus > 1 )); then
      step "data_parallel_$model" "$tp" dist dataparallel --model "$model" --batch 128 --steps 30 --warmup 5 \
        --threads "$gpus" --out "$out/dist/data_parallel_$model.json"
    fi
  done
fi
for json in "$out"/*.json; do
  case "$json" in *devices.json|*diagnose_device.json|*diagnose_memory.json) continue ;; esac
  name="$(basename "$json" .json)"
  step "report_$name" "$tp" report "$json" --out "$out/report_$name"
done
cat "$out/steps.txt"
exit $failed
