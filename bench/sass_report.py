#!/usr/bin/env python3
# Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
"""Static SASS evidence for the decode kernels: resources and instruction mix per phase.

Runs on any machine with nvcc (no GPU needed). It

1. reads the resource usage (registers, stack, shared memory) of EVERY kernel of a built
   libmoeroute.a (`cuobjdump -res-usage`), so spills and stack frames show up;
2. compiles tiny.cu, gate.cu and sort.cu a second time with MR_STAMP(slot) defined as
   `nanosleep.u32 100 + slot` (a SASS-visible marker; the library defines MR_STAMP empty) and
   counts, for the decode kernels the default rules pick (docs/design.md 18, 25 - 27, 32), the
   SASS instructions between consecutive markers, by class (global / shared memory, shuffles,
   barriers, shared atomics, special functions, branches).

The counts are STATIC: every instruction between two markers in program order, so code for
k <= 4 / 8 / 16 merges, fallbacks and both one-pass forms is all counted, though a call executes
one of them. They tell the size of a phase's code and what kind of work it is; the time of each
phase is what the device probes measured (docs/targets.md cites both). The marker build can
schedule a little differently from the library (a volatile asm is a code-motion barrier); the
resource table is read from the library itself.

cuobjdump is not part of every CUDA install. The script looks for $CUOBJDUMP, then PATH, then
the CUDA toolkit's bin, then wheels unpacked under --tools; with --fetch it downloads the PyPI
wheels nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm (cuobjdump -sass runs nvdisasm from its own
folder) into --tools.

    python3 bench/sass_report.py --lib build/libmoeroute.a --out bench/results/sass --fetch
"""
import argparse
import collections
import datetime
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# cuobjdump -sass runs nvdisasm from its own folder: both wheels (CUDA 13.2's tools read
# CUDA 13.0's sm_90 code).
TOOL_WHEELS = ["nvidia-cuda-cuobjdump==13.2.51", "nvidia-cuda-nvdisasm==13.2.51"]

# (label, source, kernel name (demangled; a trailing "(" makes it a regex), what the markers mean)
# Template arguments of mr_tiny_route_kernel: <DT, EPL, KIND, WIDE, ONEPASS, NT, CL, WARM, OWN, RU, FILT>;
# DT 0 fp32, 1 bf16; EPL = experts per lane (>= E / 32); KIND 0 packed 16-bit softmax,
# 1 full fp32 keys, 2 grouped.
TINY = ("tiny.cu route: 0 after the PDL wait; 2 gating done (rows, top-k, the one-pass table atomics); "
        "4 after the CTA barrier; 5 the prefix of the presence words known; 6 the entries placed; 7 done "
        "(blocks, padding, totals written). The kernel also holds the paths it does not take here "
        "(T = 1 solo / masked sort; the one-pass layout in its register and shuffle forms), so a marker "
        "can appear more than once in program order.")
GATE = "gate.cu: 0 after the PDL wait; 2 a row gated; 7 done."
TSORT = ("tiny.cu sort: 5 the entries loaded and the tables' prefix known; 6 the entries placed; 7 done "
         "(the one-pass layout, as in route, in both forms).")
KERNELS = [
    ("route T = 1, DeepSeek-R1 softmax (bf16, E 256)", "tiny.cu",
     "mr_tiny_route_kernel<1, 8, 0, false, false, 256u, false, false, false, false, 0>", TINY),
    ("route T = 2 - 8, DeepSeek-R1 softmax (one-pass, 8 warps)", "tiny.cu",
     "mr_tiny_route_kernel<1, 8, 0, false, true, 256u, false, false, false, false, 0>", TINY),
    ("route T = 9 - 12, DeepSeek-R1 softmax (one-pass, 16 warps)", "tiny.cu",
     "mr_tiny_route_kernel<1, 8, 0, false, true, 512u, false, false, false, false, 0>", TINY),
    ("route T = 1, GPT-OSS-120B (bf16, E 128)", "tiny.cu",
     "mr_tiny_route_kernel<1, 4, 0, false, false, 256u, false, false, false, false, 0>", TINY),
    ("route T = 2 - 8, GPT-OSS-120B (one-pass, 8 warps)", "tiny.cu",
     "mr_tiny_route_kernel<1, 4, 0, false, true, 256u, false, false, false, false, 0>", TINY),
    ("route T = 2 - 4, GPT-OSS-120B (one-pass, 8 warps, blocks by word ownership: the default, v17)",
     "tiny_lab.cu", "mr_tiny_route_kernel<1, 4, 0, false, true, 256u, false, false, true, false, 0>", TINY),
    ("route T = 9 - 16, DeepSeek-R1 softmax (the cluster form, v15 / design.md 34)", "tiny_lab.cu",
     "mr_tiny_route_kernel<1, 8, 0, false, true, 256u, true, false, false, false, 0>", TINY),
    ("route T = 1, grouped DeepSeek-R1 (fp32, wide rows; before the unrolled ranks)", "tiny.cu",
     "mr_tiny_route_kernel<0, 8, 2, true, false, 256u, false, false, false, false, 0>", TINY),
    ("route T = 1, grouped DeepSeek-R1 (fp32, wide rows, unrolled group ranks: the default, v17)", "tiny_lab.cu",
     "mr_tiny_route_kernel<0, 8, 2, true, false, 256u, false, false, false, true, 0>", TINY),
    ("route T = 2 - 16, grouped DeepSeek-R1 (the cluster form of the wide rows)", "tiny_lab.cu",
     "mr_tiny_route_kernel<0, 8, 2, true, true, 256u, true, false, false, false, 0>", TINY),
    ("route T = 1, Kimi-K2 (fp32, E 384, wide rows)", "tiny.cu",
     "mr_tiny_route_kernel<0, 16, 1, true, false, 256u, false, false, false, false, 0>", TINY),
    ("route T = 1, Kimi-K2 (fp32, E 384, a warp per row by the filter on approximate keys: lab knob tiny_filt, v40)",
     "tiny_lab_filt.cu", "mr_tiny_route_kernel<0, 16, 1, false, false, 256u, false, false, false, false, 2>",
     TINY),
    ("route T = 1, grouped DeepSeek-R1 (fp32, a warp per row by the filter: lab knob tiny_filt, v40)",
     "tiny_lab_filt.cu", "mr_tiny_route_kernel<0, 8, 2, false, false, 256u, false, false, false, false, 2>",
     TINY),
    ("pair, 1st launch at T >= 2, grouped DeepSeek-R1 (wide gate rows)", "gate.cu",
     "mr_gate_wide_kernel<0, 8, 2>", GATE),
    ("pair, 1st launch, DeepSeek-R1 softmax (a warp per row)", "gate.cu", "mr_gate_kernel<1, 8, 0>", GATE),
    ("pair, 2nd launch at T <= 32: the one-pass sort", "tiny.cu", "mr_tiny_sort_kernel(", TSORT),
    ("gate kernel at large T, DeepSeek-R1 softmax (8 lanes per row; the filter of v20 and the network)",
     "gate.cu", "mr_gate_seg_kernel<1, 32, 8, 8, false>", GATE),
    ("gate kernel at large T, DeepSeek-R1 softmax, packed pairs (v21 lab knob gate_seg_form 1 - 3: both bounds, and the ranks of form 3)",
     "gate.cu", "mr_gate_seg_kernel<1, 32, 8, 8, true>", GATE),
    ("gate kernel at 512 < T < 1024, Kimi-K2 (bf16 sigmoid + bias, E 384: a warp per row, the merge; targets.md L6)",
     "gate.cu", "mr_gate_kernel<1, 16, 1>", GATE),
    ("gate kernel from T = 1024, Kimi-K2: the filter on approximate keys (v31b, gate.cuh mr_sig_filter_row)",
     "gate.cu", "mr_gate_filt_kernel<1, 16, 1, 2>", GATE),
    ("gate kernel at 256 < T < 4096, grouped DeepSeek-R1 (bf16 sigmoid + bias, 8 groups: a warp per row, the merge; targets.md L6)",
     "gate.cu", "mr_gate_kernel<1, 8, 2>", GATE),
    ("gate kernel from T = 4096, grouped DeepSeek-R1: the filter on approximate keys (v31c)",
     "gate.cu", "mr_gate_filt_kernel<1, 8, 2, 2>", GATE),
]

CLASSES = collections.OrderedDict([
    ("LDG", r"^LDG|^LD\."), ("STG", r"^STG|^ST\.|^RED"), ("LDS", r"^LDS"), ("STS", r"^STS"),
    ("ATOMS", r"^ATOMS"), ("SHFL", r"^SHFL"), ("BAR", r"^BAR|^WARPSYNC"), ("MUFU", r"^MUFU"),
    ("BRA", r"^BRA|^BRX|^CALL|^RET|^EXIT"),
])

INSN = re.compile(r"^\s+/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout


def find_cuobjdump(tools, fetch):
    cands = [os.environ.get("CUOBJDUMP"), shutil.which("cuobjdump")]
    nvcc = shutil.which("nvcc")
    if nvcc:
        cands.append(os.path.join(os.path.dirname(os.path.realpath(nvcc)), "cuobjdump"))
    cands += glob.glob(os.path.join(tools, "x", "nvidia", "*", "bin", "cuobjdump"))
    for c in cands:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    if not fetch:
        sys.exit("sass_report: no cuobjdump (set CUOBJDUMP, or pass --fetch to download %s)" % " and ".join(TOOL_WHEELS))
    os.makedirs(tools, exist_ok=True)
    sh([sys.executable, "-m", "pip", "download", "--no-deps"] + TOOL_WHEELS + ["-d", tools])
    import zipfile
    for whl in glob.glob(os.path.join(tools, "nvidia_cuda_*.whl")):
        zipfile.ZipFile(whl).extractall(os.path.join(tools, "x"))
    found = None
    for c in glob.glob(os.path.join(tools, "x", "nvidia", "*", "bin", "*")):
        os.chmod(c, 0o755)
        if os.path.basename(c) == "cuobjdump":
            found = c
    if found is None:
        sys.exit("sass_report: the wheels held no cuobjdump")
    return found


def demangle(names):
    if not names:
        return {}
    out = sh(["c++filt"], input="\n".join(names) + "\n").splitlines()
    return dict(zip(names, out))


def resources(cuobjdump, objs):
    """{mangled: (file, {REG, STACK, SHARED, LOCAL})} from -res-usage."""
    res = {}
    for obj in objs:
        text = sh([cuobjdump, "-res-usage", obj])
        name = None
        for line in text.splitlines():
            m = re.match(r"\s*Function (\S+):", line)
            if m:
                name = m.group(1)
                continue
            if name and "REG:" in line:
                vals = dict((k, int(v)) for k, v in re.findall(r"(REG|STACK|SHARED|LOCAL):(\d+)", line))
                res[name] = (os.path.basename(obj).replace(".o", ""), vals)
                name = None
    return res


def marker_cubin(src, workdir, nvcc_flags):
    cubin = os.path.join(workdir, os.path.basename(src) + ".cubin")
    cmd = ["nvcc", "-O3", "-arch=sm_90", "-std=c++17", "--expt-relaxed-constexpr", "-lineinfo", "-cubin",
           "-I" + os.path.join(ROOT, "include"), "-I" + os.path.join(ROOT, "src"),
           "-I" + os.path.join(ROOT, "src", "common"),
           '-DMR_STAMP(s)=asm volatile("nanosleep.u32 %0;" :: "n"(100 + (s)))'] + nvcc_flags + [
           os.path.join(ROOT, "src", "cuda", src), "-o", cubin]
    sh(cmd)
    return cubin


def phases(cuobjdump, cubin, mangled):
    """[(slot, [mnemonics])]: the instructions after each marker up to the next one (slot -1:
    before the first marker)."""
    text = sh([cuobjdump, "-sass", "-fun", mangled, cubin])
    out = [(-1, [])]
    for line in text.splitlines():
        m = INSN.match(line)
        if not m:
            continue
        ins = re.sub(r"^@!?U?P\w+\s+", "", m.group(2))
        mk = re.match(r"NANOSLEEP 0x([0-9a-f]+)", ins)
        if mk and int(mk.group(1), 16) >= 100:
            out.append((int(mk.group(1), 16) - 100, []))
            continue
        out[-1][1].append(ins)
    return out


def classify(insns):
    c = collections.OrderedDict((k, 0) for k in CLASSES)
    for ins in insns:
        for k, rx in CLASSES.items():
            if re.match(rx, ins):
                c[k] += 1
                break
    return c


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lib", default=os.path.join(ROOT, "build", "libmoeroute.a"),
                    help="the built static library (its CUDA objects give the resource table)")
    ap.add_argument("--out", default=None, help="folder for sass.md (else stdout)")
    ap.add_argument("--tools", default=os.path.join(os.path.expanduser("~"), ".cache", "moeroute-tools"))
    ap.add_argument("--fetch", action="store_true", help="download cuobjdump's wheel if none is found")
    ap.add_argument("--commit", default="", help="the commit the build is of (for the header)")
    args = ap.parse_args()

    cuobjdump = find_cuobjdump(args.tools, args.fetch)
    md = []
    nvcc_ver = sh(["nvcc", "--version"]).strip().splitlines()[-1]
    md.append("# SASS evidence: resources of every kernel, instruction mix of the decode kernels\n")
    cuobj_ver = sh([cuobjdump, "--version"]).strip().splitlines()[-1]
    md.append("Made by `python3 bench/sass_report.py --lib %s%s` on %s (no GPU needed); nvcc: %s; "
              "cuobjdump: %s.\n" % (os.path.relpath(args.lib, ROOT) if args.lib.startswith(ROOT) else args.lib,
                                    " --commit " + args.commit if args.commit else "",
                                    datetime.date.today().isoformat(), nvcc_ver, cuobj_ver))
    if args.commit:
        md.append("Commit: %s.\n" % args.commit)

    with tempfile.TemporaryDirectory() as tmp:
        # 1. the library's own kernels
        members = [m for m in sh(["ar", "t", args.lib]).split() if m.endswith(".cu.o")]
        sh(["ar", "x", os.path.abspath(args.lib)] + members, cwd=tmp)
        res = resources(cuobjdump, [os.path.join(tmp, m) for m in members])
        names = demangle(sorted(res))
        md.append("## Marker build: SASS instructions per phase (static counts)\n")
        md.append("Phase = the instructions from one MR_STAMP marker to the next, in program order "
                  "(all branches). Classes: LDG / STG global loads / stores, LDS / STS shared, ATOMS "
                  "shared atomics, SHFL shuffles, BAR barriers and warp syncs, MUFU special functions "
                  "(exp2, rcp), BRA branches, calls and exits.\n")
        cubins = {}
        for label, src, rx, legend in KERNELS:
            if src not in cubins:
                cubins[src] = marker_cubin(src, tmp, [])
            syms = sorted(resources(cuobjdump, [cubins[src]]))
            dm = demangle(syms)
            hits = [s for s in syms if re.search(re.escape(rx) if rx.endswith("(") else re.escape(rx) + r"\(",
                                                 dm[s])]
            if len(hits) != 1:
                md.append("### %s\n\nkernel `%s`: %d matches in the marker build (skipped)\n" % (label, rx, len(hits)))
                continue
            sym = hits[0]
            lib = res.get(sym, ("?", {}))[1]
            md.append("### %s\n" % label)
            md.append("`%s`: %s registers, %s bytes of stack in the library. Markers: %s\n" % (
                dm[sym].split("(")[0], lib.get("REG", "?"), lib.get("STACK", "?"), legend))
            md.append("| segment (marker to marker, program order) | SASS | " + " | ".join(CLASSES) + " |")
            md.append("|---|---|" + "---|" * len(CLASSES))
            segs = phases(cuobjdump, cubins[src], sym)
            total = 0
            for i, (slot, insns) in enumerate(segs):
                if not insns:
                    continue
                nxt = segs[i + 1][0] if i + 1 < len(segs) else None
                c = classify(insns)
                total += len(insns)
                what = "%s -> %s" % ("entry" if slot < 0 else slot, "end of code" if nxt is None else nxt)
                if len(segs) == 1:
                    what = "the whole kernel (it has no markers)"
                if nxt is None and len(segs) > 1:
                    what += " (out-of-line: non-converged shuffle fallbacks, slow paths)"
                md.append("| %s | %d | %s |" % (what, len(insns), " | ".join(str(v) for v in c.values())))
            md.append("| total | %d | |\n" % total)

        # the resource table last (long)
        md.append("## Every kernel of the library: registers, stack, shared memory\n")
        stacked = [(n, f, v) for n, (f, v) in res.items() if v.get("STACK", 0) or v.get("LOCAL", 0)]
        md.append("%d kernels; %d with a stack frame or local memory (spills or dynamically indexed "
                  "arrays): %s.\n" % (len(res), len(stacked), ", ".join(
                      "`%s` %d B" % (names[n].split("(")[0], v.get("STACK", 0) + v.get("LOCAL", 0))
                      for n, f, v in sorted(stacked, key=lambda x: names[x[0]])) or "none"))
        md.append("| object | kernel | REG | STACK | SHARED (static) |")
        md.append("|---|---|---|---|---|")
        for n, (f, v) in sorted(res.items(), key=lambda x: (x[1][0], names[x[0]])):
            md.append("| %s | `%s` | %d | %d | %d |" % (f, names[n].split("(")[0], v.get("REG", 0),
                                                       v.get("STACK", 0), v.get("SHARED", 0)))
    text = "\n".join(md) + "\n"
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "sass.md"), "w") as f:
            f.write(text)
        print("wrote %s" % os.path.join(args.out, "sass.md"))
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
