# dev/lab_prelude.sh - the common start of a lab device-call script (sourced, from session 16 on;
# the scripts up to lab_run46.sh keep their own copy as the record of what ran):
#   LAB=<name> . dev/lab_prelude.sh <lab programs ...>
# sets O (the output folder: $OUT, else /tmp/$LAB), B (the build folder), T0; writes $O/env.log
# (card, driver, clock, commit, date); builds the library (Release, CUDA) into $B, then each named
# dev/<program>.cu against it in parallel; exits with the build log's tail when the library fails.
set -u
export PATH=$PATH:/usr/local/cuda/bin
O=${OUT:-/tmp/${LAB:-lab}}; mkdir -p $O; T0=$SECONDS
B=/tmp/bn
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; echo "commit ${COMMIT:-?}"; date -u; } > $O/env.log
( cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DMOEROUTE_CUDA=ON > $O/build.log 2>&1 && cmake --build $B -j16 >> $O/build.log 2>&1 ) || { tail -30 $O/build.log; exit 1; }
for lab_prog in "$@"; do
  nvcc -O3 -arch=sm_90 --expt-relaxed-constexpr -Iinclude -Isrc -Isrc/common dev/$lab_prog.cu $B/libmoeroute.a -o $B/$lab_prog >> $O/build.log 2>&1 &
done
wait
echo "build $((SECONDS-T0)) s" >> $O/env.log
