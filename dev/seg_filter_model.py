#!/usr/bin/env python3
# Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
"""A host model of gate.cuh's filter for the segment rows (perf-log v20, v21): how many candidates
the busiest lane of a warp holds for each bound, on random bf16 rows. The warp runs the candidate
loop as many times as that lane has candidates, so this predicts the loop's trip count.

Bounds (a segment of LPR lanes holds one row, EPS = E / LPR elements per lane, 32 / LPR rows per warp):
  A  the least of the lanes' maxima (v20)
  B  the k-th largest of the lanes' half-maxima (even and odd elements; v21, gate_seg_form 2)
  C  the k-th largest of the lanes' quarter-maxima (not built)
  X  the exact k-th largest element (a floor for any bound)

    python3 dev/seg_filter_model.py [--warps N]
"""
import argparse

import numpy as np


def bf16(x):
    u = x.astype(np.float32).view(np.uint32)
    u = ((u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000).astype(np.uint32)
    return u.view(np.float32)


def model(rng, E, LPR, k, dist, nwarps):
    EPS, RPW = E // LPR, 32 // LPR
    n = nwarps * RPW
    if dist == "gauss":
        x = rng.standard_normal((n, E))
    elif dist == "uniform":
        x = rng.random((n, E))
    else:  # rows with a per-expert offset (a router's preference)
        x = rng.standard_normal((n, E)) + 0.5 * rng.standard_normal(E)
    x = bf16(x).reshape(n, LPR, EPS)
    kth = lambda m: -np.sort(-m.reshape(n, -1), 1)[:, k - 1]
    bounds = {
        "A": x.max(2).min(1),
        "B": kth(np.stack([x[:, :, i::2].max(2) for i in range(2)], 2)),
        "C": kth(np.stack([x[:, :, i::4].max(2) for i in range(4)], 2)),
        "X": kth(x),
    }
    out = {}
    for name, th in bounds.items():
        c = (x >= th[:, None, None]).sum(2)  # candidates per lane
        busiest = c.reshape(nwarps, RPW * LPR).max(1)
        out[name] = (c.sum(1).mean(), busiest.mean(), np.percentile(busiest, 99), (busiest > 16).mean())
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--warps", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    print("E LPR k rows | bound: candidates per row, busiest lane of a warp (mean, p99), warps over 16")
    for E, LPR, k in ((256, 8, 8), (128, 4, 4)):
        for dist in ("gauss", "uniform", "gauss_bias"):
            for name, v in model(rng, E, LPR, k, dist, a.warps).items():
                print("%3d %d %d %-10s | %s: %6.2f  %5.2f  %3.0f  %.4f" % ((E, LPR, k, dist, name) + v))


if __name__ == "__main__":
    main()
