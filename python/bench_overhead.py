#!/usr/bin/env python3
# Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
"""Python call overhead of moeroute, side by side with the raw C call, in one run.

For each shape it times, per call (host time, eager, median over batches):
  c_raw        ctypes call of moeroute_{cuda,cpu}_route with prepared params/buffers (the floor)
  route_out    moeroute.route(logits, ..., out=bufs) with a route_buffers() bundle (the hot path)
  route_dict   moeroute.route(..., out=dict, workspace=ws): caller arrays checked every call
  route_alloc  moeroute.route(logits, ...): outputs and workspace allocated by the framework
  vllm_pair    moeroute.vllm.topk_softmax + moe_align_block_size (drop-ins, preallocated)
and the overhead of each over c_raw. Each timed batch launches `--batch` calls and then
synchronises (outside the timer for the launches themselves: the launch queue never fills),
so the numbers are the host cost of a call, not kernel time.

    python python/bench_overhead.py --device cuda --out-dir bench/results
    python python/bench_overhead.py --device cpu            # NumPy, CPU backend

Writes overhead.md and overhead.csv into --out-dir (if given) and prints the table.
"""
import argparse
import csv
import io
import os
import platform
import statistics
import sys
import time

import numpy as np

import moeroute
from moeroute import _arrays as A
from moeroute import _lib as L


def per_call_us(fn, sync, batch, repeats):
    for _ in range(max(3, batch // 10)):
        fn()
    sync()
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter_ns()
        for _ in range(batch):
            fn()
        t1 = time.perf_counter_ns()
        sync()
        samples.append((t1 - t0) / batch / 1000.0)
    return statistics.median(samples), min(samples)


def make_inputs(device, T, E, rng):
    x = rng.standard_normal((T, E)).astype(np.float32)
    if device == "cpu":
        return x, (lambda: None), "numpy"
    import torch
    t = torch.from_numpy(x).to("cuda").to(torch.bfloat16)
    return t, torch.cuda.synchronize, "torch-" + torch.__version__


def bench_shape(device, T, E, k, U, batch, repeats, rng):
    logits, sync, framework = make_inputs(device, T, E, rng)
    kw = dict(top_k=k, unit_size=U, layout="both")
    bufs = moeroute.route_buffers(logits, **kw)
    moeroute.route(logits, out=bufs, **kw)           # prepares the plan and binds logits

    # the raw C call: the prepared params and buffers of that very call, called through ctypes
    plan = next(p for p in moeroute._core._plans.values() if p.sig == bufs._sig and p.op == L.OP_ROUTE)
    params, cbuf = plan.params, bufs._cbuf
    if device == "cpu":
        cfn = L.cpu_route
        c_raw = lambda: cfn(params, cbuf)                            # noqa: E731
    else:
        cfn = L.cuda_route
        stream = A.current_stream(A.describe(logits, "logits")) or None
        c_raw = lambda: cfn(params, cbuf, stream)                    # noqa: E731
    assert c_raw() == 0

    ws_bytes = moeroute.workspace_size("route", logits, **kw)
    out_dict = {f: getattr(bufs, f) for f in ("topk_ids", "topk_weights", "sorted_ids", "sorted_weights",
                                               "sorted_expert_ids", "num_valid_ids", "sorted_token_ids",
                                               "expert_ids", "num_tokens_post_pad")}
    ws = bufs.workspace if bufs.workspace is not None else (
        np.empty(max(ws_bytes, 1), np.uint8) if device == "cpu" else None)
    if ws is None:
        import torch
        ws = torch.empty(max(ws_bytes, 1), dtype=torch.uint8, device="cuda")

    from moeroute import vllm as mr_vllm
    cap = T * k + E * (U - 1)
    if device == "cpu":
        vb = (np.empty((T, k), np.float32), np.empty((T, k), np.int32), np.empty((T, k), np.int32),
              np.empty(cap, np.int32), np.empty(-(-cap // U), np.int32), np.empty(1, np.int32))
    else:
        import torch
        dev = logits.device
        vb = (torch.empty((T, k), dtype=torch.float32, device=dev), torch.empty((T, k), dtype=torch.int32, device=dev),
              torch.empty((T, k), dtype=torch.int32, device=dev), torch.empty(cap, dtype=torch.int32, device=dev),
              torch.empty(-(-cap // U), dtype=torch.int32, device=dev), torch.empty(1, dtype=torch.int32, device=dev))

    def vllm_pair():
        mr_vllm.topk_softmax(vb[0], vb[1], vb[2], logits, True)
        mr_vllm.moe_align_block_size(vb[1], E, U, vb[3], vb[4], vb[5])

    cases = [
        ("c_raw", c_raw),
        ("route_out", lambda: moeroute.route(logits, out=bufs, **kw)),
        ("route_dict", lambda: moeroute.route(logits, out=out_dict, workspace=ws, **kw)),
        ("route_alloc", lambda: moeroute.route(logits, **kw)),
        ("vllm_pair", vllm_pair),
    ]
    rows = []
    base = None
    for name, fn in cases:
        us, us_min = per_call_us(fn, sync, batch, repeats)
        if base is None:
            base, base_min = us, us_min
        rows.append(dict(device=device, framework=framework, T=T, E=E, k=k, U=U, variant=name,
                         us_per_call=round(us, 3), overhead_us=round(us - base, 3), us_min=round(us_min, 3),
                         overhead_min_us=round(us_min - base_min, 3)))
    # the hot path must still be right
    want = moeroute.route(A.to_host(logits) if device == "cpu" else logits.float().cpu().numpy(), **kw)
    got = moeroute.route(logits, out=bufs, **kw).numpy()
    wrong = int(not np.array_equal(got.sorted_ids, want.sorted_ids))
    for row in rows:
        row["wrong"] = wrong
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", choices=["cpu", "cuda"], default=None)
    ap.add_argument("--shapes", default="1x256x8x32,16x256x8x32,128x256x8x64,64x128x4x32",
                    help="comma-separated TxExkxU")
    ap.add_argument("--batch", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=50)
    ap.add_argument("--out-dir", default=None)
    args = ap.parse_args(argv)
    device = args.device
    if device is None:
        device = "cuda" if moeroute.cuda_device_count() > 0 else "cpu"
    rng = np.random.default_rng(0)
    rows = []
    for shape in args.shapes.split(","):
        T, E, k, U = (int(v) for v in shape.split("x"))
        rows += bench_shape(device, T, E, k, U, args.batch, args.repeats, rng)

    head = ("moeroute %s (%s), Python %s, %s; device=%s; median of %d batches of %d eager calls; host us per call"
            % (moeroute.version(), moeroute.build_info(), platform.python_version(), platform.machine(), device,
               args.repeats, args.batch))
    if device == "cuda":
        import torch
        head += "; GPU %s" % torch.cuda.get_device_name()
    md = io.StringIO()
    md.write("# Python call overhead\n\n%s\n\nCommand: `python %s`\n\n" % (head, " ".join(
        [os.path.relpath(__file__)] + (argv if argv is not None else sys.argv[1:]))))
    md.write("| T | E | k | U | variant | us/call (median) | over c_raw | us/call (best batch) | over c_raw | wrong |\n"
             "|---|---|---|---|---|---|---|---|---|---|\n")
    for r in rows:
        md.write("| %d | %d | %d | %d | %s | %.2f | %.2f | %.2f | %.2f | %d |\n" % (
            r["T"], r["E"], r["k"], r["U"], r["variant"], r["us_per_call"], r["overhead_us"], r["us_min"],
            r["overhead_min_us"], r["wrong"]))
    text = md.getvalue()
    print(text)
    if args.out_dir:
        os.makedirs(args.out_dir, exist_ok=True)
        with open(os.path.join(args.out_dir, "overhead.md"), "w") as f:
            f.write(text)
        with open(os.path.join(args.out_dir, "overhead.csv"), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
            w.writeheader()
            w.writerows(rows)
    worst = max(r["overhead_us"] for r in rows if r["variant"] == "route_out")
    print("route_out overhead over the C call: worst %.2f us (target <= 10 us)" % worst)
    return 1 if any(r["wrong"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
