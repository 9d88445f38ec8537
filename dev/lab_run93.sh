#!/bin/bash
# Device call 93 (session 31): lab_run92.sh's parts in a compact form plus a results run, for a session with little
# device time left (one call): perf-log v32 (the head clear before gx, on by rule in the tree) and v33 (sigmoid rows by
# segments of 16 lanes, a lab knob):
# 1. gxs_lab --clearhead (DeepSeek-R1 softmax, GPT-OSS-120B; T = 1024, 2048, 4096): the forms word for word (moe_buf
#    zero, route's sort against the CPU) and timed beside a memset; its check under memcheck and racecheck;
# 2. gxs_lab --gatefilt (Kimi-K2, GLM-4.5; T = 1024, 4096, 16384, 65536): four forms word for word, timed; its check
#    under memcheck;
# 3. the results run's tests, sanitizers, cuda_check, scaling sweep and decode bench (bench/run_device_results.sh).
# (gxs_lab --clearhead and knob clear_head were removed after this call, perf-log v32: their code is 55f650e.)
# Usage on the device, repo root: COMMIT=<sha> bash dev/lab_run93.sh > $OUT/lab_summary.txt 2>&1
. dev/lab_gxs_prelude.sh
timeout 60 $B/gxs_lab --clearhead --models deepseek-r1-softmax,gpt-oss-120b --ts 1024,2048,4096 \
  > $OUT/lab/clearhead.log 2>&1; echo "rc=$?" >> $OUT/lab/clearhead.log
cat $OUT/lab/clearhead.log
for tool in memcheck racecheck; do
  timeout 45 compute-sanitizer --tool $tool --error-exitcode 9 $B/gxs_lab --clearhead --no-time \
    --models deepseek-r1-softmax --ts 1024,4096 > $OUT/lab/san_$tool.log 2>&1
  echo "clearhead $tool rc=$?" | tee -a $OUT/lab/san_$tool.log; tail -2 $OUT/lab/san_$tool.log
done
timeout 75 $B/gxs_lab --gatefilt --models kimi-k2,glm-4.5 --ts 1024,4096,16384,65536 > $OUT/lab/gatefilt.log 2>&1
echo "rc=$?" >> $OUT/lab/gatefilt.log; cat $OUT/lab/gatefilt.log
timeout 40 compute-sanitizer --tool memcheck --error-exitcode 9 $B/gxs_lab --gatefilt --no-time --models kimi-k2 \
  --ts 1024,4099 > $OUT/lab/san_gf_memcheck.log 2>&1
echo "gatefilt memcheck rc=$?" | tee -a $OUT/lab/san_gf_memcheck.log; tail -2 $OUT/lab/san_gf_memcheck.log
echo "lab done at $((SECONDS-T0)) s"
tar czf $OUT/lab.tgz -C $OUT lab && rm -rf $OUT/lab
mkdir -p /tmp/r
OUT=/tmp/r CTEST_S=${CTEST_S:-150} LARGE_S=${LARGE_S:-80} SANITIZE_S=${SANITIZE_S:-100} SCALING_S=${SCALING_S:-80} \
  BENCH_S=${BENCH_S:-60} CUDA_CHECK=${CUDA_CHECK:-300} bash bench/run_device_results.sh > /tmp/r/summary.txt 2>&1
cp /tmp/r/summary.txt $OUT/; tar czf $OUT/results.tgz -C /tmp r
echo "results run done at $((SECONDS-T0)) s"
