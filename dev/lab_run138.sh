#!/bin/bash
# Device call 138 (session 44): where v49's rows form loses (call 137: T = 2 4.94 us against the default's 2.76 for
# DeepSeek-R1 softmax, about +2 us per extra row). A wide_lab built here from the same tree (targets.md 0o; carried
# as build-probe/wide_lab.xz, CUDA 13.0, the library linked in): wide_lab --trows-probe (the kernel metric of the
# default route, its gating alone, the rows form, its gating alone, its layout alone, its rows one after the other),
# then the SASS of the rows kernel (bf16, E <= 256, R = 2) and the default route kernel: instruction counts by opcode.
# Usage on the device, repo root, carry ["build-probe/wide_lab.xz"]: bash dev/lab_run138.sh > $OUT/lab_summary.txt 2>&1
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u
unxz -k -f build-probe/wide_lab.xz && chmod +x build-probe/wide_lab || exit 1
timeout 120 build-probe/wide_lab --trows-probe; echo "rc=$?"
cuobjdump -sass build-probe/wide_lab > /tmp/all.sass 2>/dev/null
for fn in '_Z19mr_tiny_rows_kernelILi2ELi8ELi2E' '_Z19mr_tiny_rows_kernelILi2ELi8ELi4E' '_Z20mr_tiny_route_kernelILi2ELi8ELi0ELb0ELb0ELj256ELb0ELb0ELi0ELb0ELi0E'; do
  awk -v f="$fn" '/Function : /{p = index($0, f) > 0} p' /tmp/all.sass > /tmp/k.sass
  echo "== $fn: $(grep -cE '^\s+/\*[0-9a-f]{4,6}\*/' /tmp/k.sass) instructions"
  grep -oE '^\s+/\*[0-9a-f]{4,6}\*/\s+(@!?U?P[0-9T] )?[A-Z0-9_.]+' /tmp/k.sass | awk '{print $NF}' | sed -E 's/\..*//' | sort | uniq -c | sort -rn | head -24 | paste - - - -
done

