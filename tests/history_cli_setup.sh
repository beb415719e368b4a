#!/bin/sh
# Builds a history for the CLI tests from the compare fixtures: 12 runs of the baseline (commits base01..base12,
# one minute apart: each copy differs in its date, so each is a run of its own), then two runs of a commit
# 20% slower (regr01). h_pr.sqlite has the same runs with regr01 on a branch of its own (a pull request's).
# Usage: history_cli_setup.sh TORCHPROBE FIXTURE_DIR WORK_DIR
set -eu
tp="$1" fixtures="$2" work="$3"
rm -rf "$work" && mkdir -p "$work"
for i in $(seq -w 1 12); do
  sed "s/2026-11-22T08:00:00/2026-11-22T08:$i:00/" "$fixtures/compare_baseline.json" > "$work/base$i.json"
  "$tp" history add "$work/base$i.json" --db "$work/h.sqlite" --commit "base$i" --branch main
done
for i in 1 2; do
  sed "s/2026-11-22T08:00:00/2026-11-22T09:0$i:00/" "$fixtures/compare_regression.json" > "$work/regr$i.json"
done
cp "$work/h.sqlite" "$work/h_pr.sqlite"
"$tp" history add "$work/regr1.json" "$work/regr2.json" --db "$work/h_pr.sqlite" --commit regr01 --branch pr-7
"$tp" history add "$work/regr1.json" "$work/regr2.json" --db "$work/h.sqlite" --commit regr01 --branch main
