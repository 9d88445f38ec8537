#!/bin/bash
# Builds, on this machine, the binary that dev/lab_run126.sh / lab_run127.sh carry to the device: the library with
# gx's probes (-DMR_GX_PROBES=1, sm_90 only) in build-probe/, gxs_lab linked against it, stripped, and compressed to
# build-probe/gxs_lab.xz (~28 MB: the uncompressed ~66 MB would not fit the 64 MiB that travels). ~10 min on 2 cores
# from a clean build-probe/, ~1 min after a change to one .cu file. Then: run with carry ["build-probe/gxs_lab.xz"].
set -eu
export PATH=$PATH:/usr/local/cuda/bin
B=build-probe
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DMOEROUTE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
  "-DCMAKE_CUDA_FLAGS=-DMR_GX_PROBES=1" > /dev/null
cmake --build $B -j"$(nproc)" --target moeroute_static > /dev/null
nvcc -O3 -arch=sm_90 --expt-relaxed-constexpr -DMR_GX_PROBES=1 -Iinclude -Isrc -Isrc/common dev/gxs_lab.cu \
  $B/libmoeroute.a -o $B/gxs_lab
strip $B/gxs_lab
rm -f $B/gxs_lab.xz
xz -9 -T"$(nproc)" -k $B/gxs_lab
ls -la $B/gxs_lab.xz
echo "tree $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src include dev/gxs_lab.cu || echo ' + uncommitted changes')" | tee $B/TREE
