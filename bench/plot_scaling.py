#!/usr/bin/env python3
"""Plot routing time against T for every path and preset (bench/results/<card>-scaling.png).

Input: the CSV files written by `moeroute bench --backend cuda --format csv --kernel-only
--tokens ...` (see bench/scaling.sh): one run without moe_buf (--no-moe-buf) and one with it.
Output: a PNG with one panel per preset (log-log, kernel metric) and a markdown table.

Usage: plot_scaling.py NOBUF.csv BUF.csv OUT.png OUT.md
"""
import csv
import sys
from collections import defaultdict


def load(path):
    with open(path, newline="") as f:
        return [r for r in csv.DictReader(f)]


def num(r, key):
    v = r.get(key, "")
    return float(v) if v not in ("", None) else float("nan")


def main(argv):
    if len(argv) != 5:
        print(__doc__)
        return 2
    nobuf, buf, png, md = load(argv[1]), load(argv[2]), argv[3], argv[4]
    models = []
    for r in nobuf + buf:
        if r["model"] not in models:
            models.append(r["model"])
    series = defaultdict(lambda: defaultdict(list))  # model -> name -> [(T, us)]
    for rows, tag in ((nobuf, ""), (buf, " +moe_buf")):
        for r in rows:
            T = int(r["T"])
            s = series[r["model"]]
            s["route (auto)" + tag].append((T, num(r, "fused_kernel_us")))
            s["chain" + tag].append((T, num(r, "chain_kernel_us")))
            if not tag:
                s["sort only"].append((T, num(r, "sort_kernel_us")))
            else:
                s["memset alone"].append((T, num(r, "memset_kernel_us")))

    with open(md, "w") as f:
        f.write("# Routing time against T (kernel metric, us per call)\n\n")
        f.write("route (auto) = moeroute_cuda_route, the path it picks (docs/design.md 18-19); chain = "
                "moeroute_cuda_gate then moeroute_cuda_sort; sort only = moeroute_cuda_sort from a top-k.\n\n")
        f.write("| model | T | route (auto) | chain | sort only | route +moe_buf | chain +moe_buf | memset alone | "
                "route+buf / memset |\n|---|---|---|---|---|---|---|---|---|\n")
        idx = {(r["model"], int(r["T"])): r for r in buf}
        for r in nobuf:
            b = idx.get((r["model"], int(r["T"])), {})
            fb, mk = num(b, "fused_kernel_us"), num(b, "memset_kernel_us")
            ratio = fb / mk if mk and mk == mk and mk > 0 else float("nan")
            f.write(f"| {r['model']} | {r['T']} | {num(r, 'fused_kernel_us'):.2f} | {num(r, 'chain_kernel_us'):.2f} | "
                    f"{num(r, 'sort_kernel_us'):.2f} | {fb:.2f} | {num(b, 'chain_kernel_us'):.2f} | {mk:.2f} | "
                    f"{ratio:.3f} |\n")

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib missing: wrote the table only", file=sys.stderr)
        return 0
    n = len(models)
    cols = 2
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(12, 4.2 * rows), squeeze=False)
    styles = {"route (auto)": "-o", "chain": "-s", "sort only": ":^", "route (auto) +moe_buf": "--o",
              "chain +moe_buf": "--s", "memset alone": "-.x"}
    for i, m in enumerate(models):
        ax = axes[i // cols][i % cols]
        for name, pts in series[m].items():
            pts = sorted(p for p in pts if p[1] == p[1])
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], styles.get(name, "-"), label=name, ms=3)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(m)
        ax.set_xlabel("tokens T")
        ax.set_ylabel("us per call (kernel metric)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    for j in range(n, rows * cols):
        axes[j // cols][j % cols].axis("off")
    cards = sorted({r.get("device", "") for r in nobuf + buf} - {""})  # the card the CSVs name (was "H200" always)
    card = " / ".join(cards) if cards else "the device"
    fig.suptitle("moeroute on %s: routing time against T (U=32, each preset's logits dtype)" % card)
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
