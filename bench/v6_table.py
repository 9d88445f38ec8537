#!/usr/bin/env python3
# Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
"""The timing rows of `large_lab --v6` (dev/large_lab.cu, kernel metric, us) as markdown tables: for each
shape and measure (gate, route, route+buf, sort, and route+buf / memset), T down, the variants across,
each cell the variant's time and, for every variant but auto, its ratio to auto in the same process.
The last column is the log's `agree` flag (every variant's outputs bit for bit against auto's; in logs
made before session 22 with --v6-variant, large_lab compared a variant with itself: that flag says
nothing there, perf-log v21).

    python3 bench/v6_table.py dev/runs/run55/v6.log [--measures gate,route] [--variants auto,pk2,pk3]
"""
import argparse
import collections
import re
import sys

ROW = re.compile(r"^v6 (\S+)\s+T=\s*(\d+) (\S+)\s+gate\s+([\d.]+)\s+route\s+([\d.]+)\s+route\+buf\s+([\d.]+)"
                 r"\s+sort\s+([\d.]+)\s+memset\s+([\d.]+)\s+agree (\d)")
MEASURES = ["gate", "route", "route+buf", "sort", "route+buf/memset"]


def parse(lines):
    rows = collections.OrderedDict()  # (shape, T) -> {variant: {measure: value}}
    agree = {}
    for line in lines:
        m = ROW.match(line.strip())
        if not m:
            continue
        shape, T, var = m.group(1), int(m.group(2)), m.group(3)
        g, r, rb, s, ms = (float(m.group(i)) for i in range(4, 9))
        rows.setdefault((shape, T), collections.OrderedDict())[var] = {
            "gate": g, "route": r, "route+buf": rb, "sort": s, "route+buf/memset": rb / ms if ms > 0 else float("nan")}
        agree[(shape, T)] = agree.get((shape, T), 1) and int(m.group(9))
    return rows, agree


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("log")
    ap.add_argument("--measures", default=",".join(MEASURES))
    ap.add_argument("--variants", default="")
    a = ap.parse_args()
    rows, agree = parse(open(a.log))
    if not rows:
        sys.exit("no v6 timing rows in " + a.log)
    shapes = list(collections.OrderedDict.fromkeys(s for s, _ in rows))
    for shape in shapes:
        keys = sorted(T for s, T in rows if s == shape)
        variants = list(collections.OrderedDict.fromkeys(v for T in keys for v in rows[(shape, T)]))
        if a.variants:
            variants = [v for v in a.variants.split(",") if v in variants]
        for meas in a.measures.split(","):
            print("\n### %s, %s (us%s; in brackets: / auto)\n" % (shape, meas, "" if "/" not in meas else ", ratio"))
            print("| T | " + " | ".join(variants) + " | bits |")
            print("|---|" + "---|" * (len(variants) + 1))
            for T in keys:
                cells = []
                base = rows[(shape, T)].get("auto", {}).get(meas)
                for v in variants:
                    x = rows[(shape, T)].get(v, {}).get(meas)
                    if x is None:
                        cells.append("")
                    elif v == "auto" or not base:
                        cells.append("%.3f" % x if "/" in meas else "%.2f" % x)
                    else:
                        cells.append(("%.3f" if "/" in meas else "%.2f") % x + " (%.3f)" % (x / base))
                print("| %d | %s | %s |" % (T, " | ".join(cells), "equal" if agree[(shape, T)] else "DIFFER"))


if __name__ == "__main__":
    main()
