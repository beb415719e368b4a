#!/usr/bin/env bash
# torchprobe's change points (`history add` + `history show --json`) next to MongoDB's
# signal-processing-algorithms (E-divisive) and Apache Otava on labelled synthetic series (issue 35):
# recall, false detections, wall time. Writes OUT/README.md (side-by-side tables) and OUT/results.csv.
# Usage: scripts/change_points_peers.sh [--torchprobe PATH] [--out DIR] [--venv DIR] [--quick] [--show-args 'FLAGS'] [--seed N]
#   defaults: --torchprobe build/src/torchprobe --out reports/change-points --venv build/change-points-venv
#   --quick: a smoke subset (~60 series, 40 runs) instead of the full ~640 series of up to 80 runs.
#   --show-args: extra flags for torchprobe's `history show`, e.g. '--min-change 3%' (docs/history.md).
#   --seed: the series' base seed (default 35, the committed report's): another draws a fresh set of the same design.
# The venv is made when missing (needs network once). The full run takes a few minutes, most of it the
# 80 `history add` calls.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
tp="build/src/torchprobe" out="reports/change-points" venv="build/change-points-venv" quick=() show_args="" seed=35
usage="usage: scripts/change_points_peers.sh [--torchprobe PATH] [--out DIR] [--venv DIR] [--quick] [--show-args FLAGS] [--seed N]"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --torchprobe) tp="${2:?--torchprobe needs a path}"; shift 2 ;;
    --out) out="${2:?--out needs a directory}"; shift 2 ;;
    --venv) venv="${2:?--venv needs a directory}"; shift 2 ;;
    --quick) quick=(--quick); shift ;;
    --show-args) show_args="${2?--show-args needs flags}"; shift 2 ;;
    --seed) seed="${2:?--seed needs a number}"; shift 2 ;;
    -h|--help) echo "$usage"; exit 0 ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
done
[[ -x "$tp" ]] || { echo "change_points_peers: no torchprobe executable at $tp (build it first)" >&2; exit 2; }

if [[ ! -x "$venv/bin/python" ]]; then
  echo "change_points_peers: making $venv" >&2
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --upgrade pip
  "$venv/bin/pip" install --quiet apache-otava
  # signal-processing-algorithms pins old dependencies that pull in gevent, whose build fails here; the
  # E-divisive code needs only numpy, scipy, more-itertools and structlog, so it goes in without its deps.
  "$venv/bin/pip" install --quiet --no-deps signal-processing-algorithms
  "$venv/bin/pip" install --quiet numpy scipy more-itertools structlog
fi

[[ "$seed" =~ ^[0-9]+$ ]] || { echo "change_points_peers: --seed needs a non-negative integer, got '$seed'" >&2; exit 2; }
seed_arg=""; [[ "$seed" == 35 ]] || seed_arg=" --seed $seed"
command="scripts/change_points_peers.sh --torchprobe $tp --out $out --venv $venv${quick:+ --quick}${show_args:+ --show-args '$show_args'}$seed_arg"
exec "$venv/bin/python" "$here/change_points_peers.py" --torchprobe "$tp" --out "$out" "${quick[@]}" \
  --show-args "$show_args" --seed "$seed" --command "$command"
