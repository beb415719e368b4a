#!/usr/bin/env bash
# Runs COMMAND with DIR read-only, as truly as this host allows: for root, whom file modes do not stop, a
# read-only bind mount of DIR in a mount namespace of its own; for anyone else, DIR and its files without
# write permission (given back afterwards). Exits with COMMAND's status, or 77 with the reason on stdout when
# DIR cannot be made read-only here. Usage: history_read_only.sh DIR COMMAND [ARG...]
set -uo pipefail
dir="$1"
shift
if [[ "$(id -u)" == 0 ]]; then
  unshare -m true 2> /dev/null || { echo "skip: root without mount namespaces cannot make $dir read-only"; exit 77; }
  exec unshare -m bash -c '
    dir="$1"; shift
    mount --make-rprivate / && mount --bind "$dir" "$dir" && mount -o remount,bind,ro "$dir" ||
      { echo "skip: no read-only bind mount of $dir here"; exit 77; }
    touch "$dir/.probe" 2> /dev/null && { echo "history_read_only.sh: $dir is still writable" >&2; exit 3; }
    exec "$@"' bash "$dir" "$@"
fi
chmod -R a-w "$dir"
if touch "$dir/.probe" 2> /dev/null; then
  chmod -R u+w "$dir"
  echo "skip: $dir stays writable without write permission here"
  exit 77
fi
"$@"
rc=$?
chmod -R u+w "$dir"
exit "$rc"
