#!/bin/bash
# Device call 97 (session 32): perf-log v34, the 16-bit softmax rows with 16 elements per lane (Qwen3-Next) by the
# filter in the gate kernel: gxs_lab --gatefilt for qwen3-next (form 0 the merge, gate_filt -1; form 1 the filter at
# every T, gate_filt 1; forms 2 - 3 are the same as 1 for softmax rows): topk word for word on random and special rows,
# then gate alone and route timed, T = 1024 - 65536. Then bench/run_device_results.sh in the same call.
# Usage on the device, repo root: COMMIT=<sha> bash dev/lab_run97.sh > $OUT/lab_summary.txt 2>&1
. dev/lab_gxs_prelude.sh
timeout ${GF_S:-80} $B/gxs_lab --gatefilt --models ${GMODELS:-qwen3-next} --ts ${GTS:-1024,2048,4096,16384,65536} \
  > $OUT/lab/gatefilt.log 2>&1; echo "rc=$?" >> $OUT/lab/gatefilt.log
grep -E "gate alone|FAIL|MISMATCH|rc=|failure" $OUT/lab/gatefilt.log | sed -E 's/  +/ /g'
echo "lab done at $((SECONDS-T0)) s"
tar czf $OUT/lab.tgz -C $OUT lab && rm -rf $OUT/lab
