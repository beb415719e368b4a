#!/usr/bin/env bash
# scripts/run.sh's flag merging (scripts/suite_args.sh) on the quick suite's defaults: the caller's flags, then none.
# Usage: run_suite_args_test.sh SUITE_ARGS_SH
set -euo pipefail
source "$1"
defaults=(--batch-sizes 4,64 --op-set core --min-samples 5 --min-time 0.1 --timeout 1.5)
show() {
  threads=2 repetitions=3
  merge_suite_args
  echo "threads=$threads repetitions=$repetitions"
  echo "suite: ${suite[*]}"
  echo "rest: ${rest[*]+"${rest[*]}"}"
}
args=(--models net --batch-sizes 4 --threads=1 --benchmark_repetitions 5 --benchmark_min_time=0.5 --devices cpu)
show
args=()
show
