#!/bin/bash
# Lab device call (session 7, call A): where the instructions and the stalls are, per SASS
# line (ncu source counters: executed instructions and warp-state samples), for the decode
# kernels that miss most (gate kernel for Kimi-K2 and grouped DeepSeek-R1 at T = 1, tiny.cu
# and the one-launch sort for DeepSeek softmax) and the large-T kernels (segment gate, large
# sort, fp32-key gate at T = 16384). Output: one gz of CSVs + a summary log.
set -u
export PATH=$PATH:/usr/local/cuda/bin
O=${OUT:-/tmp/lab9}; mkdir -p $O; T0=$SECONDS
B=/tmp/b9; W=/tmp/w9; mkdir -p $W
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; echo "commit ${COMMIT:-?}"; date -u; ncu --version | tail -1; } > $O/env.log
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DMOEROUTE_CUDA=ON > $O/build.log 2>&1 && cmake --build $B -j16 --target moeroute_cli >> $O/build.log 2>&1 || { tail -30 $O/build.log; exit 1; }
MR=$(find $B -name moeroute -type f -perm -u+x | head -1)
echo "build $((SECONDS-T0)) s" >> $O/env.log
prof() { # name model tokens kernel-regex skip [extra bench flags]
  local name=$1 model=$2 tok=$3 kre=$4 skip=$5; shift 5
  timeout 120 ncu --clock-control none --cache-control none --set full --sampling-interval 0 \
    -k regex:$kre --launch-skip $skip --launch-count 1 -f -o $W/$name \
    $MR bench --backend cuda --kernel-only --format csv --models $model --tokens $tok "$@" > $W/$name.run 2>&1
  echo "$name rc=$? $((SECONDS-T0)) s" >> $O/env.log
  ncu -i $W/$name.ncu-rep --page source --csv --print-source sass > $W/$name.sass.csv 2> $W/$name.sass.err
  ncu -i $W/$name.ncu-rep --page details --csv > $W/$name.details.csv 2>&1
}
prof kimi_gate1 kimi-k2 1 mr_gate_kernel 3
prof dsr1_gate1 deepseek-r1 1 mr_gate_kernel 3
prof dss_tiny1 deepseek-r1-softmax 1 mr_tiny_route_kernel 3
prof dss_sort16 deepseek-r1-softmax 16 mr_small_sort_kernel 3
prof dss_gate16 deepseek-r1-softmax 16 mr_gate_kernel 3
prof dss_seg64k deepseek-r1-softmax 65536 mr_gate_seg_kernel 1 --no-moe-buf
prof dss_lcount64k deepseek-r1-softmax 65536 mr_large_count_kernel 1 --no-moe-buf
prof dss_lscat64k deepseek-r1-softmax 65536 mr_large_scatter_kernel 1 --no-moe-buf
prof kimi_gate16k kimi-k2 16384 mr_gate_kernel 1 --no-moe-buf
echo "total $((SECONDS-T0)) s" >> $O/env.log
tar czf $O/prof.tgz -C $W --exclude '*.ncu-rep' . 2>/dev/null
ls -la $W | head -40
for f in $W/*.details.csv; do echo "== $f"; grep -E '"(Duration|Executed Ipc Active|Issue Slots Busy|Registers Per Thread|Achieved Occupancy|Executed Instructions|Warp Cycles Per Issued Instruction|No Eligible|Block Size|Grid Size)"' $f | awk -F'","' '{print $(NF-2), $(NF-1), $NF}' | head -12; done
head -3 $W/kimi_gate1.sass.csv | cut -c1-600; cat $W/kimi_gate1.sass.err | head
cat $O/env.log
