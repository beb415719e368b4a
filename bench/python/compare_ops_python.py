#!/usr/bin/env python3
"""Fidelity check: torchprobe-bench's op timings vs torch.utils.benchmark on the same ops.

For each op of the core set on the CPU (fp32, same shapes, same thread count; with Debian's
python3-torch both sides run the same LibTorch .so files), runs several rounds per op; a round
runs torchprobe-bench on that one op (--op-input-sets 1, as torch.utils.benchmark reuses its
inputs) and Timer.blocked_autorange on the same op, back to back, the side that goes first alternating
from round to round (a host that drifts within a round then favours neither side). torchprobe-bench
gives the figure its report gives, the median over --repetitions repetitions of each one's mean time per
call; the Python side gives the Timer's median (its blocks have a heavy upper tail: their mean read 3-8%
above their median on the Emerald Rapids VM; both Python figures are kept in the JSON). With a single
repetition's mean instead, a burst of host noise in one round moved an op by up to 14%. The verdict uses the
median of the per-round ratios (C++ / Python); the target is agreement within +-5% for ops of 50 us or
more.

    OMP_NUM_THREADS=2 python3 bench/python/compare_ops_python.py --bench build/bench/torchprobe-bench \
        --threads 2 --out reports/latest/ops_vs_python.json

Needs Debian's python3-torch (apt-get install python3-torch); nothing else installs it.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import same_allocator  # noqa: E402,F401  (before torch: glibc reads it at start-up)
import torch  # noqa: E402
import torch.utils.benchmark as tb  # noqa: E402

# Our benchmark name -> (setup of the inputs, the statement), mirroring src/torchprobe/ops/ops.cpp.
OPS = {
    "op/matmul/cpu/n:1024/dtype:fp32": ("a = torch.randn(1024, 1024); b = torch.randn(1024, 1024)", "torch.mm(a, b)"),
    "op/conv2d/cpu/model:resnet18/input:64x64x32x32/out:64/kernel:3/stride:1/pad:1/pass:fwd/layout:nchw/dtype:fp32":
        ("x = torch.randn(64, 64, 32, 32); w = torch.randn(64, 64, 3, 3) * 0.1", "torch.conv2d(x, w, None, 1, 1)"),
    "op/relu/cpu/input:64x64x32x32/dtype:fp32": ("x = torch.randn(64, 64, 32, 32)", "torch.relu(x)"),
    "op/max_pool2d/cpu/input:64x6x28x28/kernel:2/stride:2/dtype:fp32":
        ("x = torch.randn(64, 6, 28, 28)", "torch.max_pool2d(x, (2, 2), (2, 2))"),
    "op/batch_norm/cpu/input:64x64x32x32/mode:train/dtype:fp32":
        ("x = torch.randn(64, 64, 32, 32); g = torch.ones(64); b = torch.zeros(64); m = torch.zeros(64); v = torch.ones(64)",
         "torch.batch_norm(x, g, b, m, v, True, 0.1, 1e-5, True)"),
    "op/cross_entropy/cpu/input:64x10/dtype:fp32":
        ("x = torch.randn(64, 10); t = torch.randint(10, (64,))", "torch.nn.functional.nll_loss(torch.log_softmax(x, 1), t)"),
    "op/add/cpu/input:64x64x32x32/dtype:fp32": ("x = torch.randn(64, 64, 32, 32); y = torch.randn(64, 64, 32, 32)", "torch.add(x, y)"),
    "op/sum/cpu/input:64x64x32x32/dtype:fp32": ("x = torch.randn(64, 64, 32, 32)", "torch.sum(x)"),
    "op/copy/cpu/kind:d2d/mib:64/dtype:fp32": ("x = torch.randn(16 * 1024 * 1024); z = torch.empty_like(x)", "z.copy_(x)"),
}


# The roofs torchprobe-bench measures before its first op (~7 s on 2 cores), once for all rounds.
PEAK_STORE = os.path.join(tempfile.mkdtemp(prefix="torchprobe-fidelity-"), "peaks.json")


def run_cpp(bench, name, threads, min_time, repetitions):
    """Time per call in us of one op as torchprobe's report gives it (the median over the repetitions of each
    repetition's mean per call), and the LibTorch version."""
    op = name.split("/")[1]
    pattern = "^" + name.removesuffix("/dtype:fp32" if name.startswith("op/copy/") else "") + "/manual_time$"
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        subprocess.run([bench, "--devices", "cpu", "--suites", "op", "--op-set", "core", "--ops", op, "--op-input-sets", "1",
                        "--threads", str(threads), f"--benchmark_filter={pattern}", f"--benchmark_min_time={min_time}",
                        f"--benchmark_repetitions={repetitions}",
                        "--peak-store", PEAK_STORE,
                        f"--benchmark_out={out.name}", "--benchmark_out_format=json"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        doc = json.load(open(out.name))
    runs = [b for b in doc["benchmarks"] if b.get("run_type") == "iteration"]
    assert len(runs) == repetitions, f"{name}: {len(runs)} repetitions in torchprobe-bench's results, not {repetitions}"
    scale = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}
    return (statistics.median(r["real_time"] * scale[r["time_unit"]] for r in runs),
            doc["context"].get("libtorch_version"))


def run_python(name, threads, min_time):
    """Median and mean time per call in us of one op under torch.utils.benchmark.Timer, its inputs made here and handed
    over as globals. Made by the Timer's own setup string instead, the inputs of conv2d and copy read 1.6-1.9x
    slower on the Emerald Rapids VM (26.5 against 16.0 ms; 5.5 against 2.7 ms) than a plain perf_counter loop
    and than the same Timer with globals, which agree with each other: an effect of that setup path, not of
    the ops (reports/cpu-xeon-emr-2vcpu/README.md)."""
    setup, stmt = OPS[name]
    scope = {"torch": torch}
    exec(setup, scope)
    timer = tb.Timer(stmt=stmt, globals=scope, num_threads=threads)
    m = timer.blocked_autorange(min_run_time=min_time)
    return m.median * 1e6, m.mean * 1e6


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bench", required=True)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--min-time", type=float, default=0.5)
    parser.add_argument("--repetitions", type=int, default=3,
                        help="torchprobe-bench's repetitions per round (its report's figure is their median)")
    parser.add_argument("--out")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    results = {}
    version = None
    print(f"{'op':<16} {'C++ us':>10} {'Python us':>10} {'C++/Py':>7} {'ratio IQR':>13}  verdict", flush=True)
    for name in OPS:
        cpp, py, py_means, ratios = [], [], [], []
        for r in range(args.rounds):
            if r % 2:
                p, p_mean = run_python(name, args.threads, args.min_time)
            c, version = run_cpp(args.bench, name, args.threads, args.min_time, args.repetitions)
            if not r % 2:
                p, p_mean = run_python(name, args.threads, args.min_time)
            cpp.append(c), py.append(p), py_means.append(p_mean), ratios.append(c / p)
        ratio = statistics.median(ratios)
        q = statistics.quantiles(ratios, n=4) if len(ratios) >= 2 else [ratio, ratio, ratio]
        py_median = statistics.median(py)
        verdict = "n/a (< 50 us)" if py_median < 50 else ("ok" if abs(ratio - 1) <= 0.05 else "OUTSIDE +-5%")
        short = name.split("/")[1]
        print(f"{short:<16} {statistics.median(cpp):>10.1f} {py_median:>10.1f} {ratio:>7.3f} {q[0]:>6.3f}-{q[2]:<6.3f}  {verdict}",
              flush=True)
        results[name] = {"cpp_us": cpp, "python_us": py, "python_mean_us": py_means, "ratios": ratios,
                         "median_ratio": ratio, "verdict": verdict}
    print(f"C++ LibTorch {version}, Python torch {torch.__version__}, {args.threads} threads, {args.rounds} "
          f"rounds per op of {args.min_time} s each side, the first side alternating; C++: the median of {args.repetitions} "
          f"repetitions' means, Python: the Timer's median")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"threads": args.threads, "libtorch": version, "python_torch": torch.__version__,
                       "rounds": args.rounds, "min_time_s": args.min_time, "repetitions": args.repetitions,
                       "statistic": "C++: the median over the repetitions of each one's mean per call; Python: blocked_autorange's median",
                       "order": "C++ first in even rounds, Python first in odd ones", "ops": results}, f, indent=1)


if __name__ == "__main__":
    main()
