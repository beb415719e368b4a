#!/usr/bin/env python3
"""Per-step minimum and median of torchprobe-bench (repetitions of 2 samples, its least: --min-samples 2
--min-time 0 --max-noise 100) vs the Python loop for
net at batch 64 and 256, alternating in chunks. Run from the project root after building."""
import json, subprocess, statistics as st, sys
sys.path.insert(0, "bench/python"); import torch, train_step_reference as r
torch.set_num_threads(2)
for batch in (64, 256):
    cpp, py = [], []
    for chunk in range(4):
        for side in (("cpp", "py") if chunk % 2 == 0 else ("py", "cpp")):
            if side == "cpp":
                out = subprocess.run(["build/bench/torchprobe-bench", "--devices", "cpu", "--models", "net", "--batch-sizes",
                                      str(batch), "--suites", "train", "--threads", "2", "--min-samples", "2",
                                      "--min-time", "0", "--max-noise", "100",
                                      "--benchmark_repetitions=15", "--benchmark_format=json"], capture_output=True, text=True).stdout
                cpp += [b["real_time"] for b in json.loads(out)["benchmarks"] if b["run_type"] == "iteration"]
            else:
                py += r.time_steps("net", batch, min_time=0, min_samples=15)
    print(f"net/{batch}: cpp n={len(cpp)} min {min(cpp):.2f} median {st.median(cpp):.2f} | py n={len(py)} min {min(py):.2f} "
          f"median {st.median(py):.2f} | speedup by min {min(py)/min(cpp):.2f}x, by median {st.median(py)/st.median(cpp):.2f}x")
