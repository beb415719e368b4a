#!/usr/bin/env python3
"""Power of the newest-runs statistic of `history`'s change points (docs/history.md), by simulation.

A series of n runs whose last three are a step up (or pure noise), tested with permutations as
src/torchprobe/history/change_points.cpp does: the end-anchored divergence Q (Matteson & James, alpha = 1) over
every split, combined by Westfall & Young's min-p with a statistic over the last three splits only, either Q there
("Q", the statistic before 2026-11-29) or the shift of the mean m k / n (mean after - mean before)^2 ("shift", the
one used now). Also each of the two alone. Prints the share of series with p < 0.05 for each.

Usage: python3 scripts/change_points_tail_sim.py [--series N] [--seed S]   (needs numpy; e.g. the venv of
scripts/change_points_peers.sh: build/change-points-venv/bin/python). A benchmark of the method, not a test:
about 25 s for the default 120 series per cell.
"""
import argparse

import numpy as np

PERMUTATIONS = 199
ALPHA = 0.05
TAIL = 3


def end_anchored_q(x):
    """Q(tau) for every split tau of each row of x (rows: shuffles), right side to the end; column 0 unused."""
    rows, n = x.shape
    cum = np.abs(x[:, :, None] - x[:, None, :]).cumsum(1).cumsum(2)

    def block(a, b):  # sum of |xi - xj| over i, j in [a, b)
        total = cum[:, b - 1, b - 1]
        if a > 0:
            total = total - cum[:, a - 1, b - 1] - cum[:, b - 1, a - 1] + cum[:, a - 1, a - 1]
        return total

    q = np.zeros((rows, n))
    whole = block(0, n) / 2
    for tau in range(1, n):
        m, k = tau, n - tau
        left, right = block(0, tau) / 2, block(tau, n) / 2
        between = whole - left - right
        within_left = left / (m * (m - 1) / 2) if m >= 2 else 0
        within_right = right / (k * (k - 1) / 2) if k >= 2 else 0
        q[:, tau] = m * k / (m + k) * (2 * between / (m * k) - within_left - within_right)
    return q


def mean_shift(x):
    """m k / n (mean after - mean before)^2 for every split of each row; column 0 unused."""
    rows, n = x.shape
    cum = x.cumsum(1)
    out = np.zeros((rows, n))
    for tau in range(1, n):
        m, k = tau, n - tau
        diff = (cum[:, -1] - cum[:, tau - 1]) / k - cum[:, tau - 1] / m
        out[:, tau] = m * k / n * diff * diff
    return out


def statistics(x):
    n = x.shape[1]
    q = end_anchored_q(x)
    return np.stack([q[:, 1:].max(1), q[:, n - TAIL:].max(1), mean_shift(x)[:, n - TAIL:].max(1)], 1)


def p_values(series, rng):
    shuffles = np.array([rng.permutation(series) for _ in range(PERMUTATIONS)])
    drawn, observed = statistics(shuffles), statistics(series[None])[0]
    alone = (1 + (drawn >= observed * (1 - 1e-12)).sum(0)) / (1 + PERMUTATIONS)
    ranked = np.sort(drawn, 0)

    def p_of(stat, values):
        return (1 + PERMUTATIONS - np.searchsorted(ranked[:, stat], values * (1 - 1e-12))) / (1 + PERMUTATIONS)

    drawn_p = np.stack([p_of(k, drawn[:, k]) for k in range(3)], 1)
    out = {}
    for name, stats in (("end Q + tail Q", [0, 1]), ("end Q + tail shift", [0, 2])):
        smallest = alone[stats].min()
        out[name] = (1 + (drawn_p[:, stats].min(1) <= smallest * (1 + 1e-12)).sum()) / (1 + PERMUTATIONS)
    out["tail Q alone"], out["tail shift alone"] = alone[1], alone[2]
    return out


def series_of(rng, kind, n, step, sd):
    level = np.ones(n)
    level[n - TAIL:] *= 1 + step
    if kind == "normal":
        noise = rng.normal(0, sd, n)
    elif kind == "t3":
        noise = rng.standard_t(3, n) * sd / np.sqrt(3)
    else:  # 30% outlier runs of +-15..30%
        noise = rng.normal(0, sd, n)
        wild = rng.random(n) < 0.3
        noise[wild] += rng.choice([-1, 1], wild.sum()) * rng.uniform(0.15, 0.3, wild.sum())
    return 10 * level * (1 + noise)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--series", type=int, default=120, help="series per cell (default %(default)s)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    cells = [("normal", 0.0, 0.02), ("outliers", 0.0, 0.01), ("t3", 0.0, 0.02), ("normal", 0.03, 0.02),
             ("normal", 0.05, 0.02), ("normal", 0.10, 0.05), ("t3", 0.05, 0.02), ("t3", 0.03, 0.01)]
    print(f"share of series with p < {ALPHA} ({args.series} series per row, {PERMUTATIONS} shuffles, "
          f"a step {TAIL} runs before the end)")
    header = None
    for kind, step, sd in cells:
        for n in (20, 40, 80):
            hits = {}
            for _ in range(args.series):
                for name, p in p_values(series_of(rng, kind, n, step, sd), rng).items():
                    hits[name] = hits.get(name, 0) + (p < ALPHA)
            if header is None:
                header = list(hits)
                print("| noise | step | sd | runs | " + " | ".join(header) + " |")
                print("|---|---:|---:|---:|" + "---:|" * len(header))
            print(f"| {kind} | {step:+.0%} | {sd:.0%} | {n} | "
                  + " | ".join(f"{hits[h] / args.series:.0%}" for h in header) + " |", flush=True)


if __name__ == "__main__":
    main()
