#!/usr/bin/env bash
# scripts/gpu_session.sh's bookkeeping, on a host without a GPU (77 = skip where one exists: the GPU session runs
# the real thing). Usage: gpu_session_test.sh CASE SOURCE_DIR BUILD_DIR
#   plan      --list: every step in a group with a limit; bad arguments exit 2
#   no_gpu    GPU steps are "not run" (never a pass), the rest runs, one tarball holds it all
#   deadline  a step cut by the call's deadline is "timed out", its benchmark file complete and kept; the next "not run"
set -uo pipefail
case_name="$1" src="$2" build="$3"
session="$src/scripts/gpu_session.sh"
fail() { echo "FAIL: $*" >&2; exit 1; }
if nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then echo "this host has a GPU: gpu_session.sh runs for real there"; exit 77; fi
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
# run_session EXPECTED_RC ARGS...: runs the session into $work/s packed into $work/g.tar.gz, checks its exit code,
# unpacks the tarball into $work/x (what a lent machine's call brings back) and sets tsv to its steps.tsv.
run_session() {
  local want="$1"; shift
  bash "$session" "$@" --tar "$work/g.tar.gz" "$work/s" > "$work/out.txt" 2>&1
  local rc=$?; cat "$work/out.txt"
  [[ $rc == "$want" ]] || fail "exit $rc, expected $want"
  mkdir "$work/x" && tar -xzf "$work/g.tar.gz" -C "$work/x" || fail "the tarball does not unpack"
  tsv="$work/x/s/steps.tsv"
}
export TORCHPROBE_BUILD_DIR="$build" TORCHPROBE_DEVICES=cpu
case "$case_name" in
  plan)
    list="$(bash "$session" --list)" || fail "--list exit $?"
    for step in inventory gpu_tests host_tests diagnose_device diagnose_memory sanitizer profile quick isolate_off isolate_on \
                variants_net variants_resnet18 ops_gemm ops_copy ops_cold ops_conv nccl_allreduce nccl_train \
                nccl_torchrun data_parallel reports; do
      grep -Eq "^$step +[0-3] +[0-9]+s " <<< "$list" || fail "--list has no line for $step: $list"
    done
    said="$(bash "$session" --group 4 "$work/s" 2>&1)"; [[ $? == 2 && "$said" == *"error: --group is 1, 2 or 3"* ]] || fail "--group 4 accepted: $said"
    bash "$session" --steps inventory,nope "$work/s" > /dev/null 2>&1; [[ $? == 2 ]] || fail "an unknown step is not exit 2"
    bash "$session" --deadline soon "$work/s" > /dev/null 2>&1; [[ $? == 2 ]] || fail "--deadline soon is not exit 2"
    said="$(bash "$session" --tar /nonexistent/x.tgz "$work/s" 2>&1)"; [[ $? == 2 && "$said" == *"cannot write in /nonexistent"* ]] || fail "--tar into a missing dir: $said"
    ;;
  no_gpu)
    run_session 0 --steps inventory,gpu_tests,sanitizer,reports
    grep -q $'^inventory\tok\t0\t' "$tsv" || fail "inventory not ok: $(cat "$tsv")"
    grep -q $'^gpu_tests\tnot run\t-\t0\tno GPU on this host' "$tsv" || fail "gpu_tests not 'not run': $(cat "$tsv")"
    grep -q $'^sanitizer\tnot run\t' "$tsv" || fail "sanitizer not 'not run'"
    grep -q $'^reports\tok\t' "$tsv" || fail "reports not ok"
    grep -q '"libtorch_version"' "$work/x/s/devices.json" || fail "devices.json missing from the tarball"
    grep -q "not run: gpu_tests sanitizer" "$work/out.txt" || fail "the not-run steps are not listed last"
    ;;
  deadline)
    # 45 s for the call: the quick suite on the CPU (over a minute) gets 25 s, then is stopped with SIGINT.
    # The roofs come from a store (no 5-20 s measurement), so the first benchmark (net, batch 4: ~1 s of
    # samples) is on disk long before the stop, however busy the host.
    cp "$src/tests/fixtures/peaks/cpu.json" "$work/peaks.json"
    export TORCHPROBE_BENCH_ARGS="--peak-store $work/peaks.json"
    run_session 1 --steps quick,ops_gemm,reports --deadline 45  # a timed-out step makes the exit 1
    grep -q $'^quick\ttimed out\t124\t' "$tsv" || fail "quick not 'timed out': $(cat "$tsv")"
    grep -q $'^ops_gemm\tnot run\t' "$tsv" || fail "ops_gemm ran: $(cat "$tsv")"
    grep -q $'^reports\tnot run\t-\t0\tno time left' "$tsv" || fail "reports had time: $(cat "$tsv")"
    grep -q '"torchprobe_run": "partial: interrupted by SIGINT' "$work/x/s/quick.json" || fail "quick.json is not a kept partial run"
    "$build/src/torchprobe" report "$work/x/s/quick.json" --out "$work/r" --quiet || fail "the partial quick.json does not report"
    ;;
  *) fail "unknown case $case_name" ;;
esac
echo "PASS: $case_name"
