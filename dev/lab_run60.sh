#!/bin/bash
# Lab device call 60 (session 24): as call 59 (dev/lab_run59.sh), gx after call 59: the TR rows reduced
# without bank conflicts (expert e at e + e / 16), and gx-seg: the TR form gating by segments of 16 lanes
# (two rows per warp and step, R a multiple of 16). Call 59 read: gx after call 58.s stamps (the count publication 2.0 us, the count
# rows read one load after the other 1.7 us): every count load in flight, and the TR form (each CTA's
# counts as one contiguous row, vector stores; the rows read by (row group, column) in 16-bit lanes and
# reduced in shared memory); the zeroing launch with PDL. Checks (both forms, both barrier words, with
# and without a mask) and times with stamps. gx_lab comes prebuilt (carry build-gx: the library is the
# code of main, unchanged since 49a8bf1, built here with the same nvcc 13.0); built on the device if not.
export PATH=$PATH:/usr/local/cuda/bin
O=$OUT; G=build-gx/gx_lab
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; echo "commit ${COMMIT:-?}"; date -u; } > $O/env.log
if [ ! -x $G ] || ldd $G 2>&1 | grep -q "not found"; then LAB=lab60 . dev/lab_prelude.sh gx_lab; G=$B/gx_lab; fi
timeout ${GX_S:-120} $G --ts ${GX_TS:-64,256,1024,2048,4096} > $O/gx.log 2>&1; echo "gx rc=$?" >> $O/gx.log
grep -vE "^check .* ok " $O/gx.log
timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 --print-limit 10 $G --no-time > $O/gx_memcheck.log 2>&1
echo "memcheck rc=$?" >> $O/gx_memcheck.log; tail -3 $O/gx_memcheck.log
cat $O/env.log
