#!/usr/bin/env python3
"""Side by side: torchprobe-bench's C++ training step vs the same step in PyTorch Python.

For each model x batch (CPU, same thread count, same LibTorch version where the Python torch is
Debian's python3-torch), runs several rounds; each round runs the C++ benchmark and the Python
loop for the same time, in alternating order, so machine drift hits both alike. Each side's figure for a round
is its mean time per step; the table shows the median over rounds and the median of the
per-round ratios (speedup = Python / C++). Raw per-round figures go to the JSON file.

    python3 bench/python/compare_cpp_python.py --bench build/bench/torchprobe-bench --threads 2 \
        --out reports/latest/cpp_vs_python.json

Needs Debian's python3-torch (apt-get install python3-torch), the Python side of the LibTorch 1.13 that the
debian flavour builds against; nothing else installs it.
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
import train_step_reference as reference  # noqa: E402


def run_cpp(bench, model, batch, threads, min_time):
    """Mean ms per step of one torchprobe-bench run, and its LibTorch version."""
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        subprocess.run([bench, "--devices", "cpu", "--models", model, "--batch-sizes", str(batch), "--suites", "train",
                        "--dtypes", "fp32", "--layouts", "nchw",
                        "--threads", str(threads), f"--benchmark_min_time={min_time}", f"--benchmark_out={out.name}",
                        "--benchmark_out_format=json"], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        doc = json.load(open(out.name))
    (run,) = [b for b in doc["benchmarks"] if b.get("run_type") == "iteration"]
    assert run["time_unit"] == "ms", run["time_unit"]
    return run["real_time"], doc["context"].get("libtorch_version")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bench", required=True)
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--models", nargs="+", default=["net", "resnet18"])
    parser.add_argument("--batch-sizes", nargs="+", type=int, default=[4, 64, 256])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--min-time", type=float, default=1.0)
    parser.add_argument("--out")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    rows, raw = [], []
    for model in args.models:
        for batch in args.batch_sizes:
            cpp_ms, py_ms = [], []
            for r in range(args.rounds):
                # Alternate which side goes first, so drift within a round favours neither.
                for side in (("cpp", "py") if r % 2 == 0 else ("py", "cpp")):
                    if side == "cpp":
                        ms, cpp_torch = run_cpp(args.bench, model, batch, args.threads, args.min_time)
                        cpp_ms.append(ms)
                    else:
                        py_ms.append(statistics.mean(reference.time_steps(model, batch, args.min_time, min_samples=1)))
            ratios = [p / c for p, c in zip(py_ms, cpp_ms)]
            cpp, py = statistics.median(cpp_ms), statistics.median(py_ms)
            rows.append(f"| {model} | {batch} | {cpp:.3f} | {py:.3f} | {statistics.median(ratios):.2f}x "
                        f"| {min(ratios):.2f}x .. {max(ratios):.2f}x |")
            raw.append({"model": model, "batch": batch, "cpp_ms": cpp_ms, "python_ms": py_ms,
                        "cpp_libtorch": cpp_torch, "python_torch": torch.__version__, "threads": args.threads})
            print(rows[-1], file=sys.stderr, flush=True)
    print(f"CPU, {args.threads} threads; C++ LibTorch {raw[0]['cpp_libtorch']}, Python torch {torch.__version__}; "
          f"{args.rounds} alternating rounds of >= {args.min_time} s per side; ms per step (median over rounds "
          f"of each round's mean); speedup = median of per-round Python/C++ ratios\n")
    print("| model | batch | C++ ms | Python ms | C++ speedup | range over rounds |\n|---|---|---|---|---|---|")
    print("\n".join(rows))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(raw, f, indent=1)


if __name__ == "__main__":
    main()
