#!/bin/bash
# Device call 92 (session 31): perf-log v32 and v33; route with a moe_buf where gx takes the call without it: the head clear
# (a launch of its own between gx's zeroing launch and gx; gx comes up beside it and waits for it at its end) against
# the clear inside the paths with a moe_buf and the tail clear after gx; and v31d (the gate kernel's 16-bit softmax rows
# with 16 elements per lane at a minimum of 1 CTA per SM):
# 1. gxs_lab --clearhead: the three forms word for word (moe_buf zero after each, route's sort against the CPU), then
#    each timed beside a memset of the same moe_buf, at T = 1024 - 4096 for DeepSeek-R1 softmax and GPT-OSS-120B;
# 2. the same check under compute-sanitizer memcheck, racecheck and synccheck (T = 1024, 4096; no timing);
# 3. perf-log v33: gxs_lab --gatefilt, sigmoid rows without groups by segments of 16 lanes (form "seg", knob
#    gate_sig_seg = 1) against the merge, the warp-per-row filter and its approximate keys: word for word on random and
#    special rows, then gate alone and route timed (Kimi-K2, GLM-4.5, MiniMax-M2, Llama-4 Maverick), and its check under
#    memcheck and racecheck;
# 4. with BOUNDS=1, gxs_lab --bounds for Qwen3-Next at T = 2047 / 2048 / 2560 (v31d's kernel in the chain);
# 5. with RESULTS=1, a full results run of the tree at its tail (bench/run_device_results.sh).
# (Never run: the device calls failed to start; dev/lab_run93.sh ran its parts. gxs_lab --clearhead and knob
# clear_head were removed after lab call 93, perf-log v32: their code is 55f650e.)
# Usage on the device, repo root: COMMIT=<sha> RESULTS=1 bash dev/lab_run92.sh > $OUT/lab_summary.txt 2>&1
. dev/lab_gxs_prelude.sh
timeout ${CH_S:-100} $B/gxs_lab --clearhead --models ${MODELS:-deepseek-r1-softmax,gpt-oss-120b} \
  --ts ${TS:-1024,1500,2048,3072,4096} > $OUT/lab/clearhead.log 2>&1; echo "rc=$?" >> $OUT/lab/clearhead.log
cat $OUT/lab/clearhead.log
for tool in memcheck racecheck synccheck; do
  timeout 90 compute-sanitizer --tool $tool --error-exitcode 9 $B/gxs_lab --clearhead --no-time \
    --models deepseek-r1-softmax,gpt-oss-120b --ts 1024,4096 > $OUT/lab/san_$tool.log 2>&1
  echo "$tool rc=$?" | tee -a $OUT/lab/san_$tool.log; tail -3 $OUT/lab/san_$tool.log
done
timeout ${GF_S:-150} $B/gxs_lab --gatefilt --models ${GMODELS:-kimi-k2,glm-4.5,minimax-m2,llama4-maverick} \
  --ts ${GTS:-1024,2048,4096,16384,65536} > $OUT/lab/gatefilt.log 2>&1; echo "rc=$?" >> $OUT/lab/gatefilt.log
cat $OUT/lab/gatefilt.log
for tool in memcheck racecheck; do
  timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 $B/gxs_lab --gatefilt --no-time \
    --models kimi-k2,glm-4.5 --ts 1024,4099 > $OUT/lab/san_gf_$tool.log 2>&1
  echo "gatefilt $tool rc=$?" | tee -a $OUT/lab/san_gf_$tool.log; tail -3 $OUT/lab/san_gf_$tool.log
done
if [ "${BOUNDS:-0}" = 1 ]; then
  timeout ${BD_S:-80} $B/gxs_lab --bounds --models qwen3-next --ts ${BTS:-2047,2048,2560} > $OUT/lab/bounds.log 2>&1
  echo "rc=$?" >> $OUT/lab/bounds.log
  grep -E "^bounds [a-z]|FAIL|MISMATCH|WRONG|failure|rc=" $OUT/lab/bounds.log
fi
echo "lab done at $((SECONDS-T0)) s"
tar czf $OUT/lab.tgz -C $OUT lab && rm -rf $OUT/lab
if [ "${RESULTS:-0}" = 1 ]; then
  mkdir -p /tmp/r
  OUT=/tmp/r CTEST_S=${CTEST_S:-200} LARGE_S=${LARGE_S:-100} SANITIZE_S=${SANITIZE_S:-110} SCALING_S=${SCALING_S:-130} \
    BENCH_S=${BENCH_S:-80} CUDA_CHECK=${CUDA_CHECK:-400} bash bench/run_device_results.sh > /tmp/r/summary.txt 2>&1
  cp /tmp/r/summary.txt $OUT/; tar czf $OUT/results.tgz -C /tmp r
  echo "results run done at $((SECONDS-T0)) s"
fi
