#!/usr/bin/env python3
"""Render `moeroute bench --backend cuda --format csv` as the markdown table of
bench/results/h200-decode.md. Usage: decode_md.py IN.csv OUT.md "command" "card/commit/date line" """
import csv
import sys


def main(argv):
    rows = list(csv.DictReader(open(argv[1], newline="")))
    cols = ["model", "T", "E", "k", "fused_kernel_us", "chain_kernel_us", "speedup", "fused_graph_us",
            "chain_graph_us", "fused_eager_us", "chain_eager_us", "sort_kernel_us", "memset_kernel_us", "wrong"]
    with open(argv[2], "w") as f:
        card = argv[4].split(" (")[0].split(",")[0]
        f.write(f"# moeroute decode benchmark on {card} (us per call)\n\n")
        f.write(f"Command: `{argv[3]}`\n\n{argv[4]}\n\n")
        r0 = rows[0]
        f.write(f"Floors of the same run: one-block kernel {r0['floor_kernel_us']} us (kernel metric), "
                f"{r0['floor_graph_us']} us (one-node graph), {r0['floor_eager_us']} us (eager).\n")
        f.write("fused = moeroute_cuda_route, its automatic path (src/cuda/entry.cu; docs/design.md 18, 24 - 26, 32: one launch of tiny.cu at T = 1 for 16-bit softmax rows of any E and for the sigmoid / sqrt_softplus rows of the wide gate rows, and for 16-bit softmax rows at 2 <= T <= 8 with E >= 16 and T*k <= 40 (64 for E <= 256), and at 9 <= T <= 16 with 16 <= E <= 256 and T*k <= 96 (16 gating warps), finishing in one pass behind one barrier; (design.md 34) for E >= 64 on sm_90 the same route by a cluster of C = 2 - 8 CTAs that split the rows: wide gate rows at 2 <= T <= 16 for E <= 256 (T <= 8 above, T <= 6 for E >= 1024), the fp32-key rows (softmax with bias or groups, fp32 softmax) at every T <= 32, 16-bit softmax rows from T = 9 (T = 6 for E >= 512, or for k >= 8 with E <= 128), where T*k fits the tiny path; else the gate kernel and the one-launch sort with PDL between them); chain = moeroute_cuda_gate then moeroute_cuda_sort; "
                "both clear moe_buf [T, model_dim] bf16; speedup = chain / fused in the kernel metric; "
                "every timed output checked against the CPU backend (wrong must be 0).\n\n")
        f.write("| " + " | ".join(cols) + " |\n|" + "---|" * len(cols) + "\n")
        for r in rows:
            f.write("| " + " | ".join(r[c] for c in cols) + " |\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
