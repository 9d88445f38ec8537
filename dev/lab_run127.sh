#!/bin/bash
# Device call 127 (session 41's plan for the next session; targets.md 0l): a results run of main with, on an H200,
# `gxs_lab --tail` (dev/lab_run125.sh: on an H200 the first results run since run 57), then gx's probes
# (dev/lab_run126.sh) from a prebuilt binary carried as build-probe/gxs_lab.xz, made here from the same tree by
# `bash dev/build_probe.sh` (28 MB, which with the ~35 MB tree fits the 64 MiB that travels). Without the carried
# binary the probes are skipped.
# Usage: run with carry ["build-probe/gxs_lab.xz"]:
#   export C=<sha>; bash dev/lab_run127.sh > $OUT/lab_summary.txt 2>&1
bash dev/lab_run125.sh
if [ -f build-probe/gxs_lab.xz ]; then
  xz -d -k -T4 build-probe/gxs_lab.xz && chmod +x build-probe/gxs_lab && echo "== probes at $SECONDS s" &&
    timeout 100 build-probe/gxs_lab --gx-probes --models deepseek-r1-softmax,gpt-oss-120b --ts 256,1024,2048,4096 2>&1
fi
echo "== lab_run127 done at $SECONDS s"
