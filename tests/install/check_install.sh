#!/usr/bin/env bash
# Build examples/c/route.c against an installed moeroute, once through
# pkg-config and once through find_package(moeroute), and run both.
# Usage: tests/install/check_install.sh PREFIX
set -euo pipefail
prefix=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig:$prefix/lib64/pkgconfig:${PKG_CONFIG_PATH:-}"
test -x "$prefix/bin/moeroute" && "$prefix/bin/moeroute" --version
# shared library through pkg-config
cc -std=c11 "$root/examples/c/route.c" $(pkg-config --cflags --libs moeroute) -Wl,-rpath,"$prefix/lib" -o "$work/route_pc"
"$work/route_pc"
# static library through find_package
mkdir -p "$work/cm"
cat > "$work/cm/CMakeLists.txt" <<CM
cmake_minimum_required(VERSION 3.20)
project(consumer C)
find_package(moeroute REQUIRED)
add_executable(route_cm "$root/examples/c/route.c")
target_link_libraries(route_cm PRIVATE moeroute::moeroute_static)
CM
cmake -S "$work/cm" -B "$work/cm/build" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/cm/build" >/dev/null
"$work/cm/build/route_cm"
echo "install check: pkg-config and find_package consumers built and ran"
