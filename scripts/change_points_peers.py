#!/usr/bin/env python3
"""Change-point detection of `torchprobe history` next to two peers, on labelled synthetic series (issue 35).

Every series is a benchmark's history of per-run times with known change points. The runs go into a fresh
history database through `torchprobe history add` (one Google Benchmark results file per run, every series
that has that run in it), `torchprobe history show --json` reports each series' per-run medians and change
points, and the same medians go to MongoDB's signal-processing-algorithms (E-divisive) and Apache Otava
(`compute_change_points`, with the defaults of Otava's own CLI). A true change at index t (the first run
after it) counts as found when a detection lies within +-2 runs (one-to-one, nearest first).

Writes OUT/README.md (what was run and the side-by-side tables) and OUT/results.csv (a row per series and tool).
Usually started by scripts/change_points_peers.sh, which makes the Python environment.
Standard library, numpy and the two peers only.
"""
import argparse
import csv
import datetime
import importlib.metadata
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
import zlib

import numpy as np
from otava.analysis import compute_change_points
from signal_processing_algorithms.energy_statistics import energy_statistics as es

BASE_SEED = 35  # issue 35; every series' generator is seeded with (BASE_SEED, crc32 of its key)
BASE_MS = 10.0
REPETITIONS = 5
HOST = "cp-bench-host"
TOLERANCE = 2  # a detection within +-2 runs of a true change finds it
NOISES = (0.5, 1.0, 2.0, 5.0)  # run-to-run relative sd, %
LENGTHS = (20, 40, 80)
MARGIN = 4  # random change positions keep at least this many runs on either side

# Apache Otava's CLI defaults (otava/main.py setup_analysis_options_parser: -P/--p-value 0.001,
# -M/--magnitude 0.0, --window 50; the same in otava/series.py AnalysisOptions.__init__).
OTAVA = {"window_len": 50, "max_pvalue": 0.001, "min_magnitude": 0.0}
# MongoDB signal-processing-algorithms: e_divisive's own defaults.
SPA = {"pvalue": 0.05, "permutations": 100}

STEP_FAMILIES = ("step", "step_tail", "step_t3", "two_steps", "undone")
FAMILY_TEXT = {
    "step": "one step at a random position, Gaussian noise",
    "step_tail": "one step with 3 runs after it (at the newest - 2), Gaussian noise",
    "step_t3": "one step at a random position, Student t (df 3) noise",
    "two_steps": "two steps at random positions",
    "undone": "a slowdown undone 5-15 runs later",
    "drift": "linear drift +10% over the series (no abrupt change)",
    "noise": "pure Gaussian noise",
    "outliers": "pure noise with 30% outlier runs (+-15..30%)",
}


# ----------------------------------------------------------------------------------------------- series

def make_series():
    """Every labelled series of the full run, in a fixed order. Levels are relative (1.0 = BASE_MS)."""
    specs = []

    def add(family, length, noise, seed, kind="normal", step=None, truth=None, changes=(), extra=""):
        key = f"{family}|{length}|{noise}|{kind}|{step}|{seed}|{extra}"
        specs.append(dict(family=family, length=length, noise=noise, kind=kind, step=step, seed=seed,
                          key=key, truth=truth, changes=list(changes)))

    def rng_of(key):
        return np.random.default_rng([BASE_SEED, zlib.crc32(key.encode())])

    def step_truth(n, t, pct):
        return [1.0] * t + [1.0 + pct / 100.0] * (n - t)

    for n in LENGTHS:
        for noise in NOISES:
            # One step at a random position: slower (+) and faster (-).
            for step, seeds in ((3, 3), (5, 3), (10, 3), (20, 3), (-5, 2), (-10, 2), (-20, 2)):
                for seed in range(seeds):
                    r = rng_of(f"pos|step|{n}|{noise}|{step}|{seed}")
                    t = int(r.integers(MARGIN, n - MARGIN + 1))
                    add("step", n, noise, seed, step=step, truth=step_truth(n, t, step), changes=[t])
            # One step whose new level shows in the 3 newest runs only.
            for step in (3, 5, 10, 20):
                for seed in range(2):
                    t = n - 3
                    add("step_tail", n, noise, seed, step=step, truth=step_truth(n, t, step), changes=[t])
            # Heavy-tailed run-to-run noise.
            for step in (5, 10, 20):
                for seed in range(2):
                    r = rng_of(f"pos|step_t3|{n}|{noise}|{step}|{seed}")
                    t = int(r.integers(MARGIN, n - MARGIN + 1))
                    add("step_t3", n, noise, seed, kind="t3", step=step, truth=step_truth(n, t, step), changes=[t])
            # Two steps, at least 6 runs apart.
            for seed in range(3):
                r = rng_of(f"pos|two_steps|{n}|{noise}|{seed}")
                t1 = int(r.integers(MARGIN, n - MARGIN - 6 + 1))
                t2 = int(r.integers(t1 + 6, n - MARGIN + 1))
                s1 = float(r.choice([5.0, 10.0, 20.0]))
                s2 = float(r.choice([5.0, 10.0, 20.0, -10.0, -15.0]))
                truth = [1.0] * t1 + [1.0 + s1 / 100] * (t2 - t1) + [(1.0 + s1 / 100) * (1.0 + s2 / 100)] * (n - t2)
                add("two_steps", n, noise, seed, step=f"{s1:+g}/{s2:+g}", truth=truth, changes=[t1, t2])
            # A slowdown undone 5..15 runs later.
            for step in (5, 10, 20):
                for seed in range(2):
                    r = rng_of(f"pos|undone|{n}|{noise}|{step}|{seed}")
                    d = int(r.integers(5, min(15, n - 2 * MARGIN) + 1))
                    t = int(r.integers(MARGIN, n - MARGIN - d + 1))
                    truth = [1.0] * t + [1.0 + step / 100] * d + [1.0] * (n - t - d)
                    add("undone", n, noise, seed, step=step, truth=truth, changes=[t, t + d], extra=f"d={d}")
            # Slow drift: +10% from the first run to the last, no abrupt change.
            for seed in range(3):
                add("drift", n, noise, seed, truth=[1.0 + 0.10 * i / (n - 1) for i in range(n)])
            # Pure noise, and pure noise with outliers.
            for seed in range(8):
                add("noise", n, noise, seed, truth=[1.0] * n)
            for seed in range(5):
                add("outliers", n, noise, seed, kind="outliers", truth=[1.0] * n)
    for k, s in enumerate(specs):
        s["k"] = k
        s["name"] = f"op/s{k:04d}/cpu/n:1"
    return specs


def realize(s):
    """The repetitions of each run (ms): level_i = truth_i * (1 + e_i); repetition = level_i * (1 + N(0, sd/2))."""
    r = np.random.default_rng([BASE_SEED, zlib.crc32(s["key"].encode())])
    n, sd = s["length"], s["noise"] / 100.0
    if s["kind"] == "t3":
        e = r.standard_t(3, n) * sd / np.sqrt(3.0)  # t(3) has variance 3: scaled to sd
    else:
        e = r.normal(0.0, sd, n)
    if s["kind"] == "outliers":
        hit = r.random(n) < 0.30
        size = r.uniform(0.15, 0.30, n) * r.choice([-1.0, 1.0], n)
        e = np.where(hit, (1.0 + e) * (1.0 + size) - 1.0, e)
    e = np.maximum(e, -0.5)  # a heavy-tailed draw past -50% would make a time near zero or negative
    level = BASE_MS * np.asarray(s["truth"]) * (1.0 + e)
    reps = level[:, None] * (1.0 + r.normal(0.0, sd / 2.0, (n, REPETITIONS)))
    return [list(map(float, row)) for row in reps]


# -------------------------------------------------------------------------------------------- torchprobe

def run_date(i):
    """Run i's date: 2026-01-01T00:00Z plus i minutes (as bench/history_docs.h's run_date)."""
    return f"2026-01-0{1 + i // 1440}T{i // 60 % 24:02d}:{i % 60:02d}:00Z"


def document(date, benchmarks):
    """A results file of one run, as torchprobe-bench writes it (bench/history_docs.h's document())."""
    entries = []
    for name, samples in benchmarks:
        for rep, ms in enumerate(samples):
            entries.append(f'{{"name": "{name}/manual_time", "run_name": "{name}/manual_time", "run_type": "iteration", '
                           f'"repetitions": {len(samples)}, "repetition_index": {rep}, "iterations": 10, '
                           f'"real_time": {ms:.9g}, "cpu_time": {ms:.9g}, "time_unit": "ms"}}')
    inventory = ('{\\"cpu\\": {\\"device\\": \\"cpu\\", \\"logical_cores\\": 2, \\"model\\": \\"Test CPU\\", '
                 '\\"torch_threads\\": 2}}')
    return (f'{{"context": {{"date": "{date}", "host_name": "{HOST}", "executable": "torchprobe-bench", "num_cpus": 2, '
            f'"library_build_type": "release", "torchprobe_version": "0.1.0", "libtorch_version": "1.13.1", '
            f'"torch_threads": "2", "blas": "OpenBLAS", "inventory": "{inventory}"}},\n'
            f'"benchmarks": [\n' + ",\n".join(entries) + "\n]}\n")


def run_checked(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"change_points_peers: {shlex.join(cmd)} exited {p.returncode}:\n{p.stderr}{p.stdout}")
    return p.stdout


def run_torchprobe(tp, specs, samples, workdir, db=None, show_args=()):
    """Adds every run to a fresh database, one `history add` per run; returns (show JSON, add s, show s).
    With `db` naming an existing database (one this script filled), the runs are not added again."""
    reuse = db is not None and os.path.exists(db)
    db = db or os.path.join(workdir, "history.sqlite")
    runs = max(s["length"] for s in specs)
    add_s = 0.0
    for i in range(0 if reuse else runs):
        path = os.path.join(workdir, f"run{i:03d}.json")
        with open(path, "w") as f:
            f.write(document(run_date(i), [(s["name"], samples[s["k"]][i]) for s in specs if i < s["length"]]))
        t0 = time.perf_counter()
        run_checked([tp, "history", "add", "--db", db, "--commit", f"{i + 1:040x}", "--branch", "main",
                     "--date", run_date(i), path])
        add_s += time.perf_counter() - t0
        os.remove(path)
        if (i + 1) % 10 == 0:
            print(f"change_points_peers: torchprobe history add: {i + 1}/{runs} runs, {add_s:.1f} s", file=sys.stderr)
    t0 = time.perf_counter()
    out = run_checked([tp, "history", "show", "--db", db, "--json", *show_args])
    show_s = time.perf_counter() - t0
    return json.loads(out), add_s, show_s


def show_defaults(tp):
    """The change-point settings `history show` uses by default, from its --help."""
    text = run_checked([tp, "history", "show", "--help"])
    found = {}
    for flag in ("min-change", "alpha", "permutations"):
        m = re.search(rf"--{flag} [^=\n]*=(\S+)", text)
        found[flag] = m.group(1) if m else "?"
    return found


def show_settings(tp, show_args):
    """The settings `history show` ran with: its defaults, and the flags given to it instead (--show-args)."""
    found = show_defaults(tp)
    for i, arg in enumerate(show_args):
        for flag in found:
            if arg == f"--{flag}" and i + 1 < len(show_args):
                found[flag] = show_args[i + 1]
            elif arg.startswith(f"--{flag}="):
                found[flag] = arg.split("=", 1)[1]
    return found


# ---------------------------------------------------------------------------------------------- scoring

def match(truth, detected):
    """One-to-one, nearest first: the number of true changes found, and the unmatched detections."""
    pairs = sorted((abs(d - t), t, d) for t in truth for d in detected if abs(d - t) <= TOLERANCE)
    used_t, used_d = set(), set()
    for _, t, d in pairs:
        if t not in used_t and d not in used_d:
            used_t.add(t)
            used_d.add(d)
    return len(used_t), len(detected) - len(used_d)


def pct(num, den):
    return "-" if den == 0 else f"{100.0 * num / den:.0f}%"


def fmt_step(step):
    return f"{step:+d}%" if isinstance(step, int) else str(step)


TOOLS = ("torchprobe", "spa", "otava")
TOOL_TEXT = {"torchprobe": "torchprobe", "spa": "MongoDB SPA", "otava": "Otava"}


def table(header, rows, left=1):
    """A Markdown table: the first `left` columns left-aligned, the rest right-aligned."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" if i < left else "---:" for i in range(len(header))) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def recalls(sel):
    """Each tool's share of the true changes of `sel` found."""
    changes = sum(len(s["changes"]) for s in sel)
    return [pct(sum(s["found"][tool] for s in sel), changes) for tool in TOOLS]


def recall_row(label, sel):
    return [label, len(sel), sum(len(s["changes"]) for s in sel), *recalls(sel)]


def any_detection_row(label, sel):
    cells = [label, len(sel)]
    for tool in TOOLS:
        hit = sum(1 for s in sel if s["detected"][tool])
        total = sum(len(s["detected"][tool]) for s in sel)
        cells.append(f"{pct(hit, len(sel))} ({total})")
    return cells


def report(specs, timings, meta):
    steps = [s for s in specs if s["family"] in STEP_FAMILIES]
    single = [s for s in specs if s["family"] in ("step", "step_tail", "step_t3")]
    tool_cols = [TOOL_TEXT[t] for t in TOOLS]
    out = []

    # Summary
    rows = [recall_row("recall, every true change (all step families)", steps)]
    sel = [s for s in single if s["step"] == 5 and s["noise"] <= 2.0]
    rows.append(recall_row("recall, +5% single steps at <= 2% noise", sel))
    rows.append(recall_row("recall, step 3 runs before the newest (step_tail, all sizes)", [s for s in specs if s["family"] == "step_tail"]))
    # torchprobe's minimum change (5% by default) is a product rule, not noise: the same rows without the +-3% steps.
    big = [s for s in steps if not isinstance(s["step"], (int, float)) or abs(s["step"]) >= 5]  # two_steps: 5..20%
    rows.append(recall_row("recall, every true change, steps of 5% and more", big))
    rows.append(recall_row("recall, step 3 runs before the newest, steps of 5% and more",
                           [s for s in big if s["family"] == "step_tail"]))
    sel = [s for s in single if s["step"] in (20, -20) and s["noise"] == 0.5]
    rows.append(recall_row("recall, +-20% single steps at 0.5% noise", sel))
    summary = table(["", "series", "true changes", *tool_cols], rows)
    rows = []
    for fam in ("noise", "outliers", "drift"):
        rows.append(any_detection_row(f"{fam}: series with any detection (detections)", [s for s in specs if s["family"] == fam]))
    cells = ["false detections per series, all step families", len(steps)]
    for tool in TOOLS:
        cells.append(f"{sum(s['false'][tool] for s in steps) / max(len(steps), 1):.2f}")
    rows.append(cells)
    cells = ["series with a false detection, all step families", len(steps)]
    for tool in TOOLS:
        cells.append(pct(sum(1 for s in steps if s["false"][tool]), len(steps)))
    rows.append(cells)
    false_table = table(["", "series", *tool_cols], rows)

    # By step x noise (one step at a random position, Gaussian noise)
    rows = []
    for step in (-20, -10, -5, 3, 5, 10, 20):
        for noise in NOISES:
            sel = [s for s in specs if s["family"] == "step" and s["step"] == step and s["noise"] == noise]
            rows.append([f"{step:+d}%", f"{noise:g}%", len(sel), *recalls(sel)])
    by_step = table(["step", "noise sd", "series", *tool_cols], rows, left=2)

    # step_tail and step_t3 by step
    rows = []
    for fam in ("step_tail", "step_t3"):
        for step in (3, 5, 10, 20):
            for lo, hi, label in ((0, 2.0, "<= 2%"), (5.0, 5.0, "5%")):
                sel = [s for s in specs if s["family"] == fam and s["step"] == step and lo <= s["noise"] <= hi]
                if sel:
                    rows.append([fam, f"{step:+d}%", label, len(sel), *recalls(sel)])
    by_tail = table(["family", "step", "noise sd", "series", *tool_cols], rows, left=3)

    # By family
    rows = []
    for fam in STEP_FAMILIES:
        sel = [s for s in specs if s["family"] == fam]
        cells = recall_row(fam, sel)
        for tool in TOOLS:
            cells.append(f"{sum(s['false'][tool] for s in sel) / max(len(sel), 1):.2f}")
        rows.append(cells)
    by_family = table(["family", "series", "true changes", *[f"recall {c}" for c in tool_cols],
                       *[f"false/series {c}" for c in tool_cols]], rows)

    # By length
    rows = []
    for n in sorted({s["length"] for s in specs}):
        sel = [s for s in steps if s["length"] == n]
        cells = recall_row(str(n), sel)
        quiet = [s for s in specs if s["family"] == "noise" and s["length"] == n]
        for tool in TOOLS:
            cells.append(pct(sum(1 for s in quiet if s["detected"][tool]), len(quiet)))
        for tool in TOOLS:
            cells.append(f"{sum(s['false'][tool] for s in sel) / max(len(sel), 1):.2f}")
        rows.append(cells)
    by_length = table(["runs", "step series", "true changes", *[f"recall {c}" for c in tool_cols],
                       *[f"pure noise with a detection {c}" for c in tool_cols],
                       *[f"false/series {c}" for c in tool_cols]], rows)

    # By noise level for the pure-noise families
    rows = []
    for fam in ("noise", "outliers", "drift"):
        for noise in NOISES:
            rows.append([f"{fam}, {noise:g}%"] + any_detection_row("", [s for s in specs if s["family"] == fam and s["noise"] == noise])[1:])
    noise_table = table(["family, noise sd", "series", *[f"{c}: with any detection (detections)" for c in tool_cols]], rows)

    time_table = table(["tool", "wall time"], left=2, rows=[
        ["torchprobe", f"{timings['add']:.1f} s for {timings['runs']} `history add` calls "
                       f"({timings['add'] / timings['runs']:.2f} s each) + {timings['show']:.2f} s for one `history show --json`"],
        ["MongoDB SPA", f"{timings['spa']:.1f} s (e_divisive on each series, in this Python process)"],
        ["Otava", f"{timings['otava']:.1f} s (compute_change_points on each series, in this Python process)"],
    ])

    counts = {}
    for s in specs:
        counts[s["family"]] = counts.get(s["family"], 0) + 1
    count_rows = [[fam, FAMILY_TEXT[fam], counts.get(fam, 0)] for fam in FAMILY_TEXT]
    tp = meta["tp_settings"]
    out.append(f"""# Change points: torchprobe next to MongoDB's signal-processing-algorithms and Apache Otava

Written by `scripts/change_points_peers.py` (issue 35) on {meta['date']}{' (--quick: a smoke subset)' if meta['quick'] else ''}.

- Command: `{meta['command']}`
- torchprobe: `{meta['tp_version']}`{meta['git']}; `history show` {'with' if meta['show_args'] else 'at its defaults'}
  (`--min-change {tp['min-change']}`, `--alpha {tp['alpha']}`, `--permutations {tp['permutations']}`). A significant
  split is reported when its change could be at least the minimum (the change's 95% bootstrap interval
  excludes zero and reaches it): a step measured precisely well below it is not reported, by design, and steps
  near it are reported when the data can't rule them out. The peers have no such floor.
  Seed {BASE_SEED} draws the series (`--seed`; another seed draws a fresh set of the same design).
  One results file per run ({timings['runs']} runs, host `{HOST}`, dates one minute apart), each added with
  `history add --db DB --commit C --branch main --date D FILE` to a fresh database; change points from
  one `history show --json` (`change_points[*].index`).
- MongoDB signal-processing-algorithms {meta['spa_version']}: `e_divisive(series, pvalue={SPA['pvalue']}, permutations={SPA['permutations']})`
  (its defaults), numpy's global generator seeded per series.
- Apache Otava {meta['otava_version']}: `otava.analysis.compute_change_points(series, window_len={OTAVA['window_len']},
  max_pvalue={OTAVA['max_pvalue']}, min_magnitude={OTAVA['min_magnitude']})`, the defaults of Otava's CLI
  (`--window`, `-P/--p-value`, `-M/--magnitude` in `otava/main.py`; `AnalysisOptions` in `otava/series.py`).
- Both peers get the per-run medians that `history show --json` reports (`points[*].median_ms`), so all
  three see the same series.
- Series: {len(specs)} ({', '.join(str(n) for n in sorted({s['length'] for s in specs}))} runs long), seeded with
  ({BASE_SEED}, crc32 of the series' description). Run i's level is truth_i x (1 + e_i) with e_i the run-to-run
  noise at the given relative sd (Student t with 3 degrees of freedom scaled to that sd for `step_t3`); each
  run has {REPETITIONS} repetitions level_i x (1 + N(0, sd/2)); base {BASE_MS:g} ms. Random change positions keep at
  least {MARGIN} runs on either side; a change's index is the first run at the new level.
- Scoring: a true change at index t is found by a detection within +-{TOLERANCE} runs (one-to-one, nearest
  first); an unmatched detection is false. Drift series have no true change and are reported apart.

{table(["family", "what", "series"], count_rows, left=2)}

## Summary

{summary}

## False detections

{false_table}

(Cells: share of series with any detection, and in brackets the detections in all.)

## Recall by step and noise: one step at a random position, Gaussian noise

{by_step}

## Recall: step 3 runs before the newest (step_tail), heavy-tailed noise (step_t3)

{by_tail}

## By family

{by_family}

## By series length

{by_length}

## Series without an abrupt change, by noise

{noise_table}

## Wall time

{time_table}
""")
    return "\n".join(out)


# ------------------------------------------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--torchprobe", default="build/src/torchprobe")
    ap.add_argument("--out", default="reports/change-points")
    ap.add_argument("--quick", action="store_true", help="a smoke subset (~60 series, 40 runs)")
    ap.add_argument("--command", default=None, help="the command line to state in README.md")
    ap.add_argument("--db", default=None, help="keep torchprobe's database here; reused (not re-added) when it exists")
    ap.add_argument("--show-args", default="", help="extra flags for `history show`, e.g. '--min-change 3%%'")
    ap.add_argument("--seed", type=int, default=BASE_SEED,
                    help="base seed of every series (default %(default)s, the committed report's); another seed draws "
                         "a fresh set of the same design, to check that a change to the detector holds beyond the one set")
    args = ap.parse_args()
    globals()["BASE_SEED"] = args.seed
    tp = args.torchprobe
    if not (os.path.isfile(tp) and os.access(tp, os.X_OK)):
        sys.exit(f"change_points_peers: no torchprobe executable at {tp}")

    specs = make_series()
    if args.quick:
        specs = [s for s in specs if s["length"] <= 40][::7]
    samples = {s["k"]: realize(s) for s in specs}
    print(f"change_points_peers: {len(specs)} series", file=sys.stderr)

    with tempfile.TemporaryDirectory(prefix="change-points-") as workdir:
        shown, add_s, show_s = run_torchprobe(tp, specs, samples, workdir, args.db, shlex.split(args.show_args))
    by_name = {b["name"]: b for b in shown["benchmarks"]}
    if len(by_name) != len(shown["benchmarks"]):
        sys.exit("change_points_peers: a benchmark name came back twice from history show --json")

    spa_s = otava_s = 0.0
    for s in specs:
        b = by_name.get(s["name"])
        if b is None:
            sys.exit(f"change_points_peers: {s['name']} missing from history show --json "
                     f"(names there look like {next(iter(by_name), '?')!r})")
        medians = [p["median_ms"] for p in b["points"]]
        want = [float(np.median(r)) for r in samples[s["k"]]]
        if len(medians) != s["length"] or not np.allclose(medians, want, rtol=1e-7):
            sys.exit(f"change_points_peers: {s['name']}: history show's medians are not the runs' medians")
        s["medians"] = medians
        detected = {"torchprobe": sorted(int(c["index"]) for c in b["change_points"])}
        np.random.seed(zlib.crc32(s["key"].encode()))
        t0 = time.perf_counter()
        detected["spa"] = sorted(int(i) for i in es.e_divisive(np.array(medians), **SPA))
        t1 = time.perf_counter()
        cps, _ = compute_change_points(list(medians), **OTAVA)
        t2 = time.perf_counter()
        detected["otava"] = sorted(int(c.index) for c in cps)
        spa_s += t1 - t0
        otava_s += t2 - t1
        s["detected"] = detected
        s["found"], s["false"] = {}, {}
        for tool in TOOLS:
            s["found"][tool], s["false"][tool] = match(s["changes"], detected[tool])

    built = datetime.datetime.fromtimestamp(os.path.getmtime(tp), datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    git = f" (binary built {built}"
    try:
        rev = subprocess.run(["git", "describe", "--always", "--dirty"], capture_output=True, text=True,
                             cwd=os.path.dirname(os.path.abspath(__file__)))
        if rev.returncode == 0:
            git += f"; source tree at {rev.stdout.strip()} when run"
    except OSError:
        pass
    git += ")"
    meta = dict(
        date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        quick=args.quick,
        command=args.command or shlex.join([sys.argv[0], *sys.argv[1:]]),
        tp_version=run_checked([tp, "--version"]).strip(),
        tp_settings=show_settings(tp, shlex.split(args.show_args)),
        show_args=args.show_args,
        git=git,
        spa_version=importlib.metadata.version("signal-processing-algorithms"),
        otava_version=importlib.metadata.version("apache-otava"),
    )
    timings = dict(add=add_s, show=show_s, runs=max(s["length"] for s in specs), spa=spa_s, otava=otava_s)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "README.md"), "w") as f:
        f.write(report(specs, timings, meta))
    with open(os.path.join(args.out, "results.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["series", "family", "length", "noise_pct", "noise_kind", "step_pct", "true_indices", "tool",
                    "detected_indices", "found", "false"])
        for s in specs:
            for tool in TOOLS:
                w.writerow([s["name"], s["family"], s["length"], f"{s['noise']:g}", s["kind"],
                            "" if s["step"] is None else fmt_step(s["step"]),
                            " ".join(map(str, s["changes"])), TOOL_TEXT[tool],
                            " ".join(map(str, s["detected"][tool])), s["found"][tool], s["false"][tool]])
    print(f"change_points_peers: wrote {args.out}/README.md and {args.out}/results.csv", file=sys.stderr)


if __name__ == "__main__":
    main()
