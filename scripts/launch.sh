#!/usr/bin/env bash
# Runs N local ranks of a torchprobe distributed command, as torchrun --nproc-per-node=N would:
# each gets MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE, LOCAL_RANK; their output is collected
# (rank 0 on the terminal, every rank in LOG_DIR/rank<R>.log); the first rank to fail, or Ctrl-C,
# stops all of them. Exit status: 0 when every rank succeeded, else the first failure's.
# Usage: scripts/launch.sh N COMMAND [ARGS...]
#   e.g. scripts/launch.sh 2 build/src/torchprobe dist allreduce --max-bytes 64MiB
#   MASTER_ADDR (default 127.0.0.1), MASTER_PORT (default: a free port), LOG_DIR (default: a temp dir)
#   Other machines: run torchrun, or this script per machine with RANK offsets, or set the variables yourself.
set -uo pipefail
# `wait -n -p` (reaping whichever rank ends first, and knowing which) needs bash 5.1.
if (( BASH_VERSINFO[0] < 5 || (BASH_VERSINFO[0] == 5 && BASH_VERSINFO[1] < 1) )); then
  echo "torchprobe: error: scripts/launch.sh needs bash >= 5.1 (wait -n -p); this is bash $BASH_VERSION" >&2
  exit 2
fi
n="${1:-}"
if ! [[ "$n" =~ ^[1-9][0-9]*$ ]] || [[ $# -lt 2 ]]; then
  echo "usage: scripts/launch.sh N COMMAND [ARGS...]   (N >= 1 local ranks)" >&2
  exit 2
fi
shift
addr="${MASTER_ADDR:-127.0.0.1}"
port="${MASTER_PORT:-$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null || echo 29500)}"
logs="${LOG_DIR:-$(mktemp -d -t torchprobe-launch.XXXXXX)}"
mkdir -p "$logs"
pids=()
stop_all() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null; done
  sleep 1
  for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null; done
}
trap 'echo "torchprobe: launch: interrupted, stopping ${#pids[@]} rank(s)" >&2; stop_all; exit 130' INT TERM
echo "torchprobe: launch: $n rank(s) at $addr:$port; logs in $logs" >&2
for ((rank = 0; rank < n; rank++)); do
  if [[ $rank == 0 ]]; then
    MASTER_ADDR="$addr" MASTER_PORT="$port" RANK=$rank WORLD_SIZE=$n LOCAL_RANK=$rank "$@" \
      > >(tee "$logs/rank0.log") 2> >(tee -a "$logs/rank0.log" >&2) &
  else
    MASTER_ADDR="$addr" MASTER_PORT="$port" RANK=$rank WORLD_SIZE=$n LOCAL_RANK=$rank "$@" > "$logs/rank$rank.log" 2>&1 &
  fi
  pids+=($!)
done
status=0
active=("${pids[@]}")
while (( ${#active[@]} > 0 )); do
  done_pid=""
  wait -n -p done_pid "${active[@]}"
  rc=$?
  [[ -z "$done_pid" ]] && break  # none of them is left to wait for
  still=()
  for pid in "${active[@]}"; do [[ "$pid" != "$done_pid" ]] && still+=("$pid"); done
  active=("${still[@]+"${still[@]}"}")
  if (( rc != 0 )); then
    status=$rc
    failed_rank=?
    for ((rank = 0; rank < n; rank++)); do [[ "${pids[$rank]}" == "$done_pid" ]] && failed_rank=$rank; done
    echo "torchprobe: launch: rank $failed_rank exited with $rc; stopping the others. Its log: $logs/rank$failed_rank.log" >&2
    [[ $failed_rank != 0 ]] && tail -n 5 "$logs/rank$failed_rank.log" >&2
    stop_all
    wait 2>/dev/null  # reap the stopped ranks (and rank 0's output copies) before exiting
    break
  fi
done
exit $status
