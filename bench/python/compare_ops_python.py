#!/usr/bin/env python3
"""Fidelity check: torchprobe-bench's op timings vs torch.utils.benchmark on the same ops.

For each op of the core set on the CPU (fp32, same shapes, same thread count; with Debian's
python3-torch both sides run the same LibTorch .so files), runs several rounds; each round runs
the C++ op suite once (--op-input-sets 1, as torch.utils.benchmark reuses its inputs) and then
Timer.blocked_autorange for every op. Each side's figure is the median over rounds of its
per-round median; the target is agreement within +-5% for ops of 50 us or more.

    OMP_NUM_THREADS=2 python3 bench/python/compare_ops_python.py --bench build/bench/torchprobe-bench \
        --threads 2 --out reports/latest/ops_vs_python.json
"""
import argparse
import json
import statistics
import subprocess
import tempfile

import torch
import torch.utils.benchmark as tb

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
        ("x = torch.randn(64, 10); t = torch.randint(10, (64,))", "torch.nll_loss(torch.log_softmax(x, 1), t)"),
    "op/add/cpu/input:64x64x32x32/dtype:fp32": ("x = torch.randn(64, 64, 32, 32); y = torch.randn(64, 64, 32, 32)", "torch.add(x, y)"),
    "op/sum/cpu/input:64x64x32x32/dtype:fp32": ("x = torch.randn(64, 64, 32, 32)", "torch.sum(x)"),
    "op/copy/cpu/kind:d2d/mib:64/dtype:fp32": ("x = torch.randn(16 * 1024 * 1024); z = torch.empty_like(x)", "z.copy_(x)"),
}


def run_cpp(bench, threads, min_time):
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        subprocess.run([bench, "--devices", "cpu", "--suites", "op", "--op-set", "core", "--op-input-sets", "1",
                        "--threads", str(threads), f"--benchmark_min_time={min_time}", f"--benchmark_out={out.name}",
                        "--benchmark_out_format=json"], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        doc = json.load(open(out.name))
    scale = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}
    times = {}
    for b in doc["benchmarks"]:
        name = b["run_name"].removesuffix("/manual_time")
        if name.startswith("op/copy/"):
            name += "/dtype:fp32"
        times[name] = b["real_time"] * scale[b["time_unit"]]
    return times, doc["context"].get("libtorch_version")


def run_python(threads, min_time):
    times = {}
    for name, (setup, stmt) in OPS.items():
        timer = tb.Timer(stmt=stmt, setup=setup, globals={"torch": torch}, num_threads=threads)
        times[name] = timer.blocked_autorange(min_run_time=min_time).median * 1e6
    return times


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bench", required=True)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--min-time", type=float, default=1.0)
    parser.add_argument("--out")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    rounds = []
    for r in range(args.rounds):
        cpp, version = run_cpp(args.bench, args.threads, args.min_time)
        py = run_python(args.threads, args.min_time)
        rounds.append({"cpp_us": cpp, "python_us": py})
        print(f"round {r + 1}/{args.rounds} done", flush=True)
    print(f"C++ LibTorch {version}, Python torch {torch.__version__}, {args.threads} threads, "
          f"{args.rounds} rounds, median of per-round medians")
    print(f"{'op':<34} {'C++ us':>10} {'Python us':>10} {'C++/Py':>7}  verdict")
    summary = {}
    for name in OPS:
        cpp = statistics.median(r["cpp_us"][name] for r in rounds)
        py = statistics.median(r["python_us"][name] for r in rounds)
        ratio = cpp / py
        verdict = "n/a (< 50 us)" if py < 50 else ("ok" if abs(ratio - 1) <= 0.05 else "OUTSIDE +-5%")
        short = name.split("/")[1] + ("/" + name.split("/")[3] if name.startswith("op/copy") else "")
        print(f"{short:<34} {cpp:>10.1f} {py:>10.1f} {ratio:>7.3f}  {verdict}")
        summary[name] = {"cpp_us": cpp, "python_us": py, "ratio": ratio, "verdict": verdict}
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"threads": args.threads, "libtorch": version, "python_torch": torch.__version__,
                       "rounds": rounds, "summary": summary}, f, indent=1)


if __name__ == "__main__":
    main()
