#!/usr/bin/env bash
# torchprobe dist under the launchers people use: torchrun (the pinned PyTorch wheel's; static and c10d
# rendezvous, restarts), SLURM's variables (set by hand, without SLURM), and two simulated hosts
# (network namespaces joined by a veth pair, one torchrun "node" in each).
# Usage: launchers_test.sh CASE TORCHPROBE [TORCHRUN...]: the first TORCHRUN that runs is used
# (TORCHPROBE_TORCHRUN first). Exit 0 pass, 1 fail, 77 skipped (with the reason).
set -uo pipefail
case_name="$1" tp="$2"; shift 2
source "$(dirname "$0")/free_port.sh"
work="$(mktemp -d "${TMPDIR:-/tmp}/torchprobe-launch.XXXXXX")"
namespaces=()
cleanup() {
  jobs -p | xargs -r kill -9 2>/dev/null
  for ns in "${namespaces[@]}"; do ip netns pids "$ns" 2>/dev/null | xargs -r kill -9; ip netns del "$ns" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT
cd "$work" || exit 1
export PYTHONWARNINGS=ignore  # the wheel's "NumPy not found" warning, not ours

fail() { echo "FAIL: $*"; for f in "$work"/*.log; do [[ -f $f ]] && { echo "--- $f"; grep -v '^\*\*\*\|^W[0-9]' "$f" | tail -25; }; done; exit 1; }
skip() { echo "SKIP: $*"; exit 77; }
expect() { grep -q -- "$2" "$1" || fail "$1 does not say: $2"; }

torchrun=""
for candidate in "${TORCHPROBE_TORCHRUN:-}" "$@"; do
  [[ -n "$candidate" && -x "$candidate" ]] && "$candidate" --help > /dev/null 2>&1 && { torchrun="$candidate"; break; }
done
needs_torchrun() {
  [[ -n "$torchrun" ]] || skip "no working torchrun (the cuda flavour's torch venv has one; or set TORCHPROBE_TORCHRUN). Debian's own /usr/bin/torchrun dies before it starts a worker"
}

train=(dist train --model net --batch 8 --steps 20 --warmup 1 --repetitions 2 --threads 1 --timeout 60)

case "$case_name" in
  # torchrun's default (static) rendezvous: its agent hosts the store on MASTER_PORT, every rank is a client.
  torchrun_train)
    needs_torchrun
    "$torchrun" --nproc-per-node=2 --master-port="$(free_port)" --no-python "$tp" "${train[@]}" --json --out train.json \
      > run.log 2>&1 || fail "torchrun exited with $?"
    expect train.json '"launcher": "torchrun"'
    expect train.json '"torchelastic_restart_count": "0"'
    expect train.json '"name": "dist_train/net/cpu/world:2/batch:8/engine:gloo"'
    expect train.json '"all_reduce_share_pct"'
    expect train.json '"busbw_gbps"'
    "$tp" report train.json --out report > report.log 2>&1 || fail "report rejected torchrun's results"
    expect report/report.md "## Distributed training: scaling"
    ;;
  # The c10d rendezvous (what multi-node jobs use): the rendezvous endpoint's store is shared with the ranks.
  torchrun_c10d)
    needs_torchrun
    "$torchrun" --nnodes=1 --nproc-per-node=2 --rdzv-backend=c10d --rdzv-endpoint="127.0.0.1:$(free_port)" --no-python \
      "$tp" dist allreduce --max-bytes 64KiB --iterations 3 --repetitions 2 --threads 1 --timeout 60 > run.log 2>&1 ||
      fail "torchrun exited with $?"
    expect run.log "all-reduce (gloo, sum, fp32), 2 ranks"
    expect run.log "       65536 "
    ;;
  # A rank killed in the first attempt: torchrun restarts the group, which finishes and says so.
  torchrun_restart)
    needs_torchrun
    cat > kill_rank1.sh <<'SH'
#!/bin/sh
# Rank 1 of the first attempt is killed (SIGKILL) a second after it starts.
if [ "$RANK" = 1 ] && [ "$TORCHELASTIC_RESTART_COUNT" = 0 ]; then (sleep 1; kill -KILL $$) & fi
exec "$@"
SH
    chmod +x kill_rank1.sh
    "$torchrun" --nproc-per-node=2 --max-restarts=1 --master-port="$(free_port)" --no-python ./kill_rank1.sh "$tp" \
      dist train --model net --batch 8 --steps 300 --warmup 1 --repetitions 2 --threads 1 --timeout 60 --out train.json \
      > run.log 2>&1 || fail "torchrun exited with $? (the restarted group should finish)"
    # The first attempt failed: rank 1 killed (exitcode -9), or rank 0 first, naming rank 1 as gone.
    expect run.log "failed (exitcode: -9) local_rank: 1\|rank 1 (pid [0-9]* on [^)]*) exited or was killed"
    expect run.log "torchrun restarted this group 1 time (of at most 1): an earlier attempt failed"
    expect train.json '"torchelastic_restart_count": "1"'
    ;;
  # srun's variables and nothing else: ranks, local ranks, and the first node of the list as the master.
  slurm)
    p=$(free_port)
    for r in 0 1; do
      env -u MASTER_ADDR -u RANK -u WORLD_SIZE -u LOCAL_RANK SLURM_PROCID=$r SLURM_NTASKS=2 SLURM_LOCALID=$r \
        SLURM_NODELIST="localhost,node[2-9]" SLURM_JOB_ID=4242 MASTER_PORT=$p \
        "$tp" "${train[@]}" --json > "rank$r.log" 2>&1 &
    done
    wait %1 || fail "rank 0 exited with $?"
    wait %2 || fail "rank 1 exited with $?"
    expect rank0.log '"launcher": "slurm"'
    expect rank0.log '"name": "dist_train/net/cpu/world:2/batch:8/engine:gloo"'
    ;;
  # Two hosts simulated by network namespaces: one torchrun node of 2 ranks in each, over TCP on a veth pair,
  # each with its own host name; dist train and dist allreduce with 4 ranks.
  multinode)
    needs_torchrun
    [[ $(id -u) == 0 ]] || skip "needs root to create network namespaces"
    command -v ip > /dev/null || skip "needs ip (iproute2)"
    command -v unshare > /dev/null || skip "needs unshare (util-linux)"
    a="tpn$$a" b="tpn$$b"
    ip netns add "$a" 2> ns.log || skip "cannot create a network namespace here: $(cat ns.log)"
    namespaces+=("$a")
    ip netns add "$b" && namespaces+=("$b") || fail "second namespace"
    ip link add "tpv$$a" netns "$a" type veth peer name "tpv$$b" netns "$b" 2> ns.log || skip "no veth pairs here: $(cat ns.log)"
    ip -n "$a" addr add 10.231.0.1/24 dev "tpv$$a" && ip -n "$b" addr add 10.231.0.2/24 dev "tpv$$b" || fail "addresses"
    for ns in "$a" "$b"; do ip -n "$ns" link set lo up || fail "lo up"; done
    ip -n "$a" link set "tpv$$a" up && ip -n "$b" link set "tpv$$b" up || fail "veth up"
    node() {  # node NAMESPACE NODE_RANK COMMAND...
      local ns="$1" rank="$2"; shift 2
      ip netns exec "$ns" unshare --uts /bin/sh -c 'hostname "$0"; exec "$@"' "node$rank" "$torchrun" --nnodes=2 \
        --node-rank="$rank" --nproc-per-node=2 --master-addr=10.231.0.1 --master-port=29500 --no-python "$tp" "$@"
    }
    for what in train allreduce; do
      if [[ $what == train ]]; then args=("${train[@]}" --json); else
        args=(dist allreduce --max-bytes 256KiB --iterations 3 --repetitions 2 --threads 1 --timeout 60 --json); fi
      node "$a" 0 "${args[@]}" > "$what-node0.log" 2>&1 & p0=$!
      node "$b" 1 "${args[@]}" > "$what-node1.log" 2>&1 & p1=$!
      wait "$p0" || fail "$what: node 0 exited with $?"
      wait "$p1" || fail "$what: node 1 exited with $?"
    done
    expect train-node0.log '"name": "dist_train/net/cpu/world:4/batch:8/engine:gloo"'
    expect train-node0.log '"host_name": "node0"'
    expect allreduce-node0.log '"name": "dist_allreduce/gloo/cpu/world:4/dtype:fp32/bytes:262144"'
    # Optional link shaping (tc netem): scaling efficiency over a slower link, where the kernel has netem.
    if ip netns exec "$a" tc qdisc add dev "tpv$$a" root netem delay 2ms rate 1gbit 2> netem.log; then
      node "$a" 0 "${train[@]}" --json > shaped-node0.log 2>&1 & p0=$!
      node "$b" 1 "${train[@]}" --json > shaped-node1.log 2>&1 & p1=$!
      wait "$p0" && wait "$p1" || fail "shaped link: exit $?"
      efficiency() { grep -o '"scaling_efficiency": [0-9.e+-]*' "$1" | head -1 | cut -d' ' -f2; }
      echo "scaling efficiency, 4 ranks on two simulated hosts: plain veth $(efficiency train-node0.log);" \
        "netem delay 2ms rate 1gbit $(efficiency shaped-node0.log)"
    else
      echo "note: no tc netem on this kernel ($(head -1 netem.log)): the shaped-link run is left out"
    fi
    ;;
  *) echo "unknown case $case_name"; exit 2 ;;
esac
echo "PASS: $case_name"
