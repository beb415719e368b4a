#!/usr/bin/env bash
# Runs COMMAND while another process (the sqlite3 shell) holds an exclusive lock on the SQLite database DB
# (exclusive locking mode, so readers of a WAL database wait too), and exits with COMMAND's status. The lock
# is taken before COMMAND starts (the shell says so through a pipe: no sleeping) and rolled back after.
# Usage: history_locked.sh DB COMMAND [ARG...]
set -uo pipefail
db="$1"
shift
fifos="$(mktemp -d "${TMPDIR:-/tmp}/torchprobe-lock.XXXXXX")"
trap 'rm -rf "$fifos"' EXIT
mkfifo "$fifos/in" "$fifos/out"
sqlite3 -bail "$db" < "$fifos/in" > "$fifos/out" 2>&1 &
holder=$!
exec 3> "$fifos/in" 4< "$fifos/out"
echo "PRAGMA locking_mode = EXCLUSIVE; BEGIN EXCLUSIVE; DELETE FROM runs; SELECT 'locked';" >&3
line=""
while read -r line <&4; do
  [[ "$line" == locked ]] && break
done
if [[ "$line" != locked ]]; then
  echo "history_locked.sh: sqlite3 could not lock $db: $line" >&2
  exit 3
fi
"$@"
rc=$?
exec 3>&-  # end of input: the shell rolls back and exits
wait "$holder"
exit "$rc"
