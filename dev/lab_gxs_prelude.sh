# dev/lab_gxs_prelude.sh - the common start of the gxs lab device calls (lab_run69, 70, 72, 75; sourced):
#   . dev/lab_gxs_prelude.sh
# sets B (build-dev: the folder bench/run_device_results.sh builds in, so a results run later in the same call
# rebuilds incrementally) and T0; builds the static library and dev/gxs_lab.cu into $B; writes $OUT/lab/build.log,
# gxs_build.log and env.log (card, driver, clock, the tree's COMMIT); exits with the build log's tail when the
# library fails. (dev/lab_prelude.sh is the other labs' start: a full build in /tmp/bn.)
set -u
export PATH=$PATH:/usr/local/cuda/bin
B=build-dev; T0=$SECONDS
mkdir -p $OUT/lab
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DMOEROUTE_CUDA=ON > $OUT/lab/build.log 2>&1 && cmake --build $B -j16 --target moeroute_static >> $OUT/lab/build.log 2>&1 || { tail -30 $OUT/lab/build.log; exit 1; }
nvcc -O3 -arch=sm_90 --expt-relaxed-constexpr -Iinclude -Isrc -Isrc/common dev/gxs_lab.cu $B/libmoeroute.a -o $B/gxs_lab > $OUT/lab/gxs_build.log 2>&1
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; echo "tree: ${COMMIT:-?}"; } | tee $OUT/lab/env.log
echo "built at $((SECONDS-T0)) s"
