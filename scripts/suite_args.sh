#!/usr/bin/env bash
# scripts/run.sh's flag merging, sourced (and tested on its own: cli.run_suite_args): the caller's torchprobe-bench
# flags win over the suite's defaults. Most flags take one value, so a default the caller also gives is left out
# rather than passed twice (CLI11 refuses "--batch-sizes: At Most 1 required but received 2").
# Reads: args (the caller's flags), defaults (the suite's: "--flag value" pairs or "--flag=value"), threads,
# repetitions. Sets: threads and repetitions (the caller's where given), suite (what run.sh passes first: threads,
# repetitions, the defaults the caller left), rest (the caller's other flags, in their order).

# given FLAG: whether the caller passed FLAG (as "FLAG VALUE" or "FLAG=VALUE"); FLAG's value is then theirs.
given() {
  local arg
  for arg in "${args[@]+"${args[@]}"}"; do [[ "$arg" == "$1" || "$arg" == "$1="* ]] && return 0; done
  return 1
}
# value FLAG: the caller's value of FLAG, else empty.
value() {
  local i
  for ((i = 0; i < ${#args[@]}; i++)); do
    [[ "${args[i]}" == "$1="* ]] && { echo "${args[i]#*=}"; return; }
    [[ "${args[i]}" == "$1" ]] && { echo "${args[i + 1]:-}"; return; }
  done
}

merge_suite_args() {
  local i flag
  given --threads && threads="$(value --threads)"
  given --benchmark_repetitions && repetitions="$(value --benchmark_repetitions)"
  # The caller's flags win: a suite default the caller also gives is left out (most flags take one value).
  suite=(--threads "$threads" --benchmark_repetitions="$repetitions")
  for ((i = 0; i < ${#defaults[@]}; i++)); do
    flag="${defaults[i]%%=*}"
    # --benchmark_min_time is torchprobe-bench's --min-time under Google Benchmark's name.
    [[ "$flag" == --min-time ]] && given --benchmark_min_time && flag=--benchmark_min_time
    if [[ "${defaults[i]}" == *=* ]]; then
      given "$flag" || suite+=("${defaults[i]}")
    else
      given "$flag" || suite+=("${defaults[i]}" "${defaults[i + 1]}")
      i=$((i + 1))
    fi
  done
  rest=()
  for ((i = 0; i < ${#args[@]}; i++)); do
    case "${args[i]}" in
      --threads|--benchmark_repetitions) i=$((i + 1)) ;;  # taken into the suite above
      --threads=*|--benchmark_repetitions=*) ;;
      *) rest+=("${args[i]}") ;;
    esac
  done
}
