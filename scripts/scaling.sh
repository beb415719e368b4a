#!/usr/bin/env bash
# A scaling report on this host: `torchprobe dist train` at each world size, one results file each
# (Google Benchmark's schema), then one `torchprobe report` over all of them, whose "Distributed
# training: scaling" table gives per world size the step time, images/s, scaling efficiency, the
# gradient all-reduce's time and share of the step, and its bus bandwidth.
# Usage: scripts/scaling.sh [--sizes 1,2,4] [--out DIR] TORCHPROBE [dist train options...]
#   e.g. scripts/scaling.sh --sizes 1,2 build/src/torchprobe --model resnet18 --batch 32 --steps 20
# Ranks start under torchrun (TORCHPROBE_TORCHRUN, else the cuda flavour's venv) where one works,
# else under scripts/launch.sh. Exit: 0, or the first failing run's code (2 for bad arguments).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
sizes="1,2" out="reports/scaling"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --sizes) sizes="${2:?--sizes needs a list such as 1,2,4}"; shift 2 ;;
    --out) out="${2:?--out needs a directory}"; shift 2 ;;
    *) break ;;
  esac
done
if [[ $# -lt 1 || ! -x "$1" ]]; then
  echo "usage: scripts/scaling.sh [--sizes 1,2,4] [--out DIR] TORCHPROBE [dist train options...]" >&2
  exit 2
fi
tp="$1"; shift
IFS=, read -ra worlds <<< "$sizes"
for n in "${worlds[@]}"; do
  [[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "torchprobe: error: --sizes: '$n' is not a world size >= 1" >&2; exit 2; }
done
torchrun=""
for candidate in "${TORCHPROBE_TORCHRUN:-}" "$here/../build-cuda/torch-venv/bin/torchrun"; do
  [[ -n "$candidate" && -x "$candidate" ]] && "$candidate" --help > /dev/null 2>&1 && { torchrun="$candidate"; break; }
done
mkdir -p "$out"
files=()
for n in "${worlds[@]}"; do
  file="$out/dist_train_world$n.json"
  echo "scaling: world size $n -> $file (ranks started by ${torchrun:-scripts/launch.sh})" >&2
  if [[ -n "$torchrun" ]]; then
    PYTHONWARNINGS=ignore "$torchrun" --nproc-per-node="$n" --no-python "$tp" dist train "$@" --out "$file" > /dev/null
  else
    "$here/launch.sh" "$n" "$tp" dist train "$@" --out "$file" > /dev/null
  fi
  files+=("$file")
done
"$tp" report "${files[@]}" --out "$out"
