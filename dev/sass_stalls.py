#!/usr/bin/env python3
"""sass_stalls.py - the issue gaps ptxas encodes in one kernel's SASS (session 44, perf-log v49).

Reads `cuobjdump -sass` output and, for the instructions of one function whose addresses fall in [lo, hi), sums the
stall counts of their control bits (Volta+ encoding: bits 41-44 of the high 64-bit word; yield bit 45, write / read
barriers 46-48 / 49-51, wait mask 52-57): the fewest cycles the warp spends issuing that code, before any wait on a
result. Without a GPU, cuobjdump comes from PyPI (`pip download --no-deps nvidia-cuda-cuobjdump`, unzip, bin/).

Usage: sass_stalls.py FILE.sass FUNCTION_SUBSTRING LO_HEX HI_HEX [N: print the first N instructions]
"""
import re
import sys
from collections import Counter


def load(path, fname):
    out, on, last = [], False, None
    for line in open(path):
        if 'Function : ' in line:
            on = fname in line
            continue
        if not on:
            continue
        m = re.match(r'\s+/\*([0-9a-f]{4,6})\*/\s+(.*?);\s+/\* 0x([0-9a-f]{16}) \*/', line)
        if m:
            last = (int(m.group(1), 16), m.group(2).strip())
            continue
        m = re.match(r'\s+/\* 0x([0-9a-f]{16}) \*/', line)
        if m and last is not None:
            hi = int(m.group(1), 16)
            out.append((last[0], last[1], (hi >> 41) & 0xf, (hi >> 45) & 1, (hi >> 46) & 7, (hi >> 49) & 7,
                        (hi >> 52) & 0x3f))
            last = None
    return out


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    lo, hi = int(sys.argv[3], 16), int(sys.argv[4], 16)
    ins = [x for x in load(sys.argv[1], sys.argv[2]) if lo <= x[0] < hi]
    print(f"{len(ins)} instructions, stall counts summed {sum(x[2] for x in ins)} cycles, "
          f"{sum(1 for x in ins if x[6])} wait on a barrier")
    print("stall count: instructions", dict(sorted(Counter(x[2] for x in ins).items())))
    for a, text, stall, yld, wb, rb, wait in ins[:int(sys.argv[5]) if len(sys.argv) > 5 else 0]:
        print(f"{a:#07x} {text[:60]:60s} stall {stall:2d} yield {yld} wb {wb} rb {rb} wait {wait:06b}")


if __name__ == '__main__':
    try:
        main()
    except BrokenPipeError:  # (piped into head)
        sys.stderr.close()
