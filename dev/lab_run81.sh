#!/bin/bash
# Device call 81 (session 28): tiny.cu's decode knobs against the default at T = 2, 3, 4, 8 for GPT-OSS-120B and
# DeepSeek-R1 softmax (gxs_lab --decode: every form word for word against the default, then the kernel metric of
# each; the whole set twice).
# Usage on the device, repo root: COMMIT=<sha> bash dev/lab_run81.sh > $OUT/lab_summary.txt 2>&1
. dev/lab_gxs_prelude.sh
timeout ${DEC_S:-150} $B/gxs_lab --decode > $OUT/lab/decode.log 2>&1; echo "rc=$?" >> $OUT/lab/decode.log
cat $OUT/lab/decode.log
echo "all done at $((SECONDS-T0)) s"
tar czf $OUT/lab.tgz -C $OUT lab && rm -rf $OUT/lab
