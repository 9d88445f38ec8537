#!/bin/bash
# Lab device call 58 (session 24), after call 57 found gx ~1.6x SLOWER than predicted (T = 64: 7.85 us
# against ~4): 1. gx_lab with its probes (a plain launch instead of a cooperative one; no grid barrier;
# gating only) and thread 0's %globaltimer at each phase end, T = 64 / 256 / 1024 / 4096;
# 2. ncu of route's L1 by segments, v20's form against the packed one (large_lab v6 variant 13, T = 16384;
# call 57's ncu log did not come back): each wide L1, scan and place launch's duration and occupancy.
LAB=lab58 . dev/lab_prelude.sh gx_lab large_lab
timeout ${GX_S:-90} $B/gx_lab --ts ${GX_TS:-64,256,1024,4096} > $O/gx.log 2>&1; echo "gx rc=$?" >> $O/gx.log
grep -vE "^check .* ok " $O/gx.log
timeout ${NCU_S:-90} ncu --clock-control none -k regex:"seg_gate_wide|scatter|scan_kernel" --section LaunchStats --section Occupancy \
  --metrics gpu__time_duration.sum,smsp__cycles_active.avg,sm__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes.sum,lts__t_bytes.sum \
  $B/large_lab --v6 --v6-notime --v6-variant 13 --v6-ts 16384 > $O/ncu.log 2>&1; echo "ncu rc=$?" >> $O/ncu.log
grep -E "^  [a-z_ ]*mr_large.*\(|duration|cycles_active|throughput|bytes.sum|Achieved Occupancy|Registers Per|Static Shared|Block Limit (Reg|Shared)" $O/ncu.log | sed -E 's/ +/ /g' | head -150
cat $O/env.log
