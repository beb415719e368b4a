#!/usr/bin/env bash
# The hostile-input table: every row one bad input, the exit code it must give and the first line it
# must print. Usage: hostile_test.sh TABLE.tsv TORCHPROBE TORCHPROBE_BENCH FIXTURES_DIR
# A table row, tab-separated (lines starting with # and empty lines are skipped):
#   NAME  RC  FIRST_LINE  COMMAND  [CHECK]
# COMMAND runs under bash in a fresh scratch directory ($W) with $TP (torchprobe), $TPB
# (torchprobe-bench) and $FIX (tests/fixtures) set, bounded by 60 s (a hang fails the row).
# FIRST_LINE is an extended regex that must match the first line of stderr, or of stdout when it
# starts with "out:"; "-" checks nothing. CHECK, if given, is a bash command run afterwards in the
# same directory that must succeed (e.g. that a device node is still a device node). A COMMAND that
# exits 77 (where RC is not 77) could not set its case up on this host: the row is skipped, and the first
# line it printed says why; so is a row that needs the sqlite3 shell where there is none.
# Exit 0 when every row holds, 1 otherwise (each failing row is named with what it printed).
set -uo pipefail
table="$1"
export TP="$2" TPB="$3" FIX="$4"
# torchprobe-bench's quick plan as on a CPU with bf16 instructions, on every host (rows count its benchmarks).
export TORCHPROBE_CPU_BF16=native
failures=0
rows=0
skipped=0
while IFS=$'\t' read -r name rc first command check || [[ -n "${name:-}" ]]; do
  [[ -z "$name" || "$name" == \#* ]] && continue
  rows=$((rows + 1))
  # Rows that set their case up with the sqlite3 shell (directly or through history_locked.sh) cannot run
  # without it (the lent GPU machines have none): skipped, with the reason.
  if [[ "$command ${check:-}" == *sqlite3* || "$command" == *history_locked.sh* ]] && ! command -v sqlite3 > /dev/null; then
    skipped=$((skipped + 1))
    echo "skip $name: no sqlite3 shell on PATH (the row sets its case up with it)"
    continue
  fi
  W="$(mktemp -d "${TMPDIR:-/tmp}/torchprobe-hostile.XXXXXX")"
  export W
  (cd "$W" && timeout -k 5 60 bash -c "$command" > "$W/.out" 2> "$W/.err" < /dev/null)
  got=$?
  why=""
  if [[ "$got" == 77 && "$rc" != 77 ]]; then
    skipped=$((skipped + 1))
    echo "skip $name: $(cat "$W/.out" "$W/.err" | grep -m1 -v '^$')"
    rm -rf "$W"
    continue
  fi
  if [[ "$got" == 124 || "$got" == 137 ]]; then
    why="did not finish within 60 s"
  elif [[ "$got" != "$rc" ]]; then
    why="exit code $got, expected $rc"
  fi
  if [[ -z "$why" && "$first" != "-" ]]; then
    stream="$W/.err" pattern="$first"
    if [[ "$first" == out:* ]]; then stream="$W/.out" pattern="${first#out:}"; fi
    line="$(grep -m1 -v '^$' "$stream" || true)"
    [[ "$line" =~ $pattern ]] || why="first line '${line:0:300}' does not match '$pattern'"
  fi
  if [[ -z "$why" && -n "${check:-}" ]]; then
    (cd "$W" && bash -c "$check") > "$W/.check" 2>&1 || why="check failed: $check: $(head -c 300 "$W/.check")"
  fi
  if [[ -n "$why" ]]; then
    failures=$((failures + 1))
    echo "FAIL $name: $why"
    echo "  command: $command"
    echo "  stderr: $(head -c 600 "$W/.err")"
    echo "  stdout: $(head -c 300 "$W/.out")"
  else
    echo "ok   $name"
  fi
  rm -rf "$W"
done < "$table"
echo "hostile inputs: $((rows - failures - skipped)) of $rows rows held, $skipped skipped"
[[ $rows -gt 0 && $failures == 0 ]]
