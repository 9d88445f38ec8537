#!/bin/bash
# Device call 86 (session 29, the session's last ~230 s of device time): targets.md L6, the fp32-key rows' gate kernel
# at large T: gxs_lab --gatewide (the default warp-per-row kernel against the wide kernel, a row over four warps,
# forced at every T: topk word for word, then the gate alone's kernel metric) for Kimi-K2, grouped DeepSeek-R1,
# GLM-4.5 and MiniMax-M2 at T = 1024 - 65536. Measurement only (no rule changes with it).
# Usage on the device, repo root: COMMIT=<sha> bash dev/lab_run86.sh > $OUT/lab_summary.txt 2>&1
. dev/lab_gxs_prelude.sh
timeout ${GW_S:-60} $B/gxs_lab --gatewide --models ${MODELS:-kimi-k2,deepseek-r1,glm-4.5,minimax-m2} \
  --ts ${TS:-1024,4096,16384,65536} > $OUT/lab/gatewide.log 2>&1; echo "rc=$?" >> $OUT/lab/gatewide.log
cat $OUT/lab/gatewide.log
echo "all done at $((SECONDS-T0)) s"
tar czf $OUT/lab.tgz -C $OUT lab && rm -rf $OUT/lab
