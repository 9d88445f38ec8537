#!/usr/bin/env bash
# bench/device_run.sh - the one script to run on the GPU machine: build, test,
# sanitize, benchmark, and a summary.
#
# Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
#
# usage (from the repository root, $OUT set to an empty folder that comes back):
#   bash bench/device_run.sh
#   STEPS="test sanitize" bash bench/device_run.sh     # rerun parts (the build folder must exist)
#
# Steps (STEPS, default "build test sanitize bench"):
#   build     cmake -S . -B build-dev -DCMAKE_BUILD_TYPE=Release (CUDA on), -j16  -> build.log
#   test      ctest, every test including label gpu (test_cuda, test_cuda_quick)   -> ctest.log
#   sanitize  bench/sanitize.sh: memcheck, racecheck, synccheck, initcheck           -> sanitize.log
#   bench     moeroute bench --backend cuda, csv and table                           -> h200-decode.csv/.md, bench.log
#   large     (not in the default) test_cuda --large --group large: T = 65536, 262144 -> large.log
# and always summary.md (card, driver, date, commit, ctest counts, sanitizer verdicts,
# bench status). At most 8 files land in $OUT.
#
# Each step runs under `timeout`; the whole script keeps within BUDGET_S (default 530 s):
# a step gets min(its own limit, what is left minus a reserve) and is skipped when too
# little is left. A failing step is recorded and the next one still runs.
#
# Environment: STEPS, COMMIT (when the copy has no .git), BUDGET_S, BUILD_DIR (build-dev), JOBS (16), CMAKE_ARGS (extra
# configure arguments), TIMEOUT_BUILD (240), TIMEOUT_TEST (200), TIMEOUT_SANITIZE (170),
# TIMEOUT_BENCH (120), TIMEOUT_LARGE (240), BENCH_ARGS (extra arguments of moeroute bench), plus those of
# bench/sanitize.sh (SANITIZE_TOOLS, SANITIZE_TIMEOUT, SANITIZE_ARGS_<tool>).
set -u
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD

OUT=${OUT:-$ROOT/out}
mkdir -p "$OUT"
STEPS=${STEPS:-build test sanitize bench}
BUDGET_S=${BUDGET_S:-530}
BUILD_DIR=${BUILD_DIR:-build-dev}
JOBS=${JOBS:-16}
CMAKE_ARGS=${CMAKE_ARGS:-}
TIMEOUT_BUILD=${TIMEOUT_BUILD:-240}
TIMEOUT_TEST=${TIMEOUT_TEST:-200}
TIMEOUT_SANITIZE=${TIMEOUT_SANITIZE:-170}
TIMEOUT_BENCH=${TIMEOUT_BENCH:-120}
TIMEOUT_LARGE=${TIMEOUT_LARGE:-240}
BENCH_ARGS=${BENCH_ARGS:-}
RESERVE_S=15 # kept back for the summary

T0=$SECONDS
if ! command -v nvcc > /dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH=$PATH:/usr/local/cuda/bin
fi

left() { echo $((BUDGET_S - (SECONDS - T0) - RESERVE_S)); }
# limit for a step: min(wanted, left); 0 when under 20 s are left
limit() {
  local want=$1 l
  l=$(left)
  if [ "$l" -lt 20 ]; then echo 0; elif [ "$want" -lt "$l" ]; then echo "$want"; else echo "$l"; fi
}
want_step() { case " $STEPS " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }

declare -A STATUS
declare -A SECS
run_step() { # name limit stdout-file stderr-file command... ("-": no redirection): records STATUS, SECS
  local name=$1 lim=$2 out=$3 err=$4
  shift 4
  if [ "$lim" -le 0 ]; then
    STATUS[$name]="skipped (time budget)"
    echo "== $name: skipped, time budget spent"
    return
  fi
  echo "== $name (limit ${lim} s)"
  local t=$SECONDS rc
  if [ "$out" = - ]; then
    timeout -k 10 "$lim" "$@"
  elif [ "$out" = "$err" ]; then
    timeout -k 10 "$lim" "$@" > "$out" 2>&1
  else
    timeout -k 10 "$lim" "$@" > "$out" 2>> "$err"
  fi
  rc=$?
  SECS[$name]=$((SECONDS - t))
  if [ $rc = 0 ]; then
    STATUS[$name]="ok"
  elif [ $rc = 124 ] || [ $rc = 137 ]; then
    STATUS[$name]="TIMEOUT after ${lim} s"
  else
    STATUS[$name]="FAILED (exit $rc)"
  fi
  echo "== $name: ${STATUS[$name]} (${SECS[$name]} s)"
}

# ---- what we run on ----------------------------------------------------------
GPU=$(nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader 2>/dev/null | head -1)
COMMIT=${COMMIT:-$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)}
DIRTY=$(git status --porcelain 2>/dev/null | grep -c . || true)
DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ)
NVCC=$(nvcc --version 2>/dev/null | grep -o 'release [0-9.]*' | head -1)
echo "== device_run: $DATE, commit $COMMIT ($DIRTY uncommitted paths), steps: $STEPS"
nvidia-smi --query-gpu=index,name,driver_version,memory.total,memory.used,temperature.gpu,power.draw,clocks.sm,clocks.max.sm \
  --format=csv 2>&1 || echo "nvidia-smi failed"
echo "nvcc: ${NVCC:-not found}; cmake: $(cmake --version 2>/dev/null | head -1)"

# ---- build --------------------------------------------------------------------
do_build() {
  # shellcheck disable=SC2086
  cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DMOEROUTE_CUDA=ON $CMAKE_ARGS &&
    cmake --build "$BUILD_DIR" -j "$JOBS"
}
if want_step build; then
  export -f do_build
  export BUILD_DIR JOBS CMAKE_ARGS
  run_step build "$(limit "$TIMEOUT_BUILD")" "$OUT/build.log" "$OUT/build.log" bash -c do_build
  tail -n 5 "$OUT/build.log"
fi

# ---- test ---------------------------------------------------------------------
if want_step test; then
  # -V: test_cuda's per-group table is kept even when it passes (lines are prefixed
  # with the test number because the tests run in parallel)
  run_step test "$(limit "$TIMEOUT_TEST")" "$OUT/ctest.log" "$OUT/ctest.log" \
    ctest --test-dir "$BUILD_DIR" -j 8 -V --timeout 600
  grep -E 'tests passed|tests failed|\*\*\*|Failed|Not Run|Skipped' "$OUT/ctest.log" | grep -v '^[0-9]*: ' | tail -n 20
fi

# ---- sanitize -------------------------------------------------------------------
if want_step sanitize; then
  lim=$(limit "$TIMEOUT_SANITIZE")
  # each tool gets the step's limit minus a margin (they run in parallel)
  export SANITIZE_TIMEOUT=${SANITIZE_TIMEOUT:-$((lim > 30 ? lim - 15 : 15))}
  run_step sanitize "$lim" - - bash bench/sanitize.sh "$BUILD_DIR" "$OUT/sanitize.log"
fi

# ---- bench ----------------------------------------------------------------------
MR=$BUILD_DIR/tools/moeroute
if want_step bench; then
  : > "$OUT/bench.log"
  lim=$(limit "$TIMEOUT_BENCH")
  half=$((lim / 2))
  # shellcheck disable=SC2086
  run_step bench_csv "$half" "$OUT/h200-decode.csv" "$OUT/bench.log" "$MR" bench --backend cuda --format csv $BENCH_ARGS
  lim=$(limit "$TIMEOUT_BENCH")
  # shellcheck disable=SC2086
  run_step bench_table "$((lim < half ? lim : half))" "$OUT/h200-decode.md" "$OUT/bench.log" \
    "$MR" bench --backend cuda --format table $BENCH_ARGS
  {
    echo
    echo "<!-- $MR bench --backend cuda --format table $BENCH_ARGS; card: ${GPU:-unknown}; commit $COMMIT; $DATE -->"
  } >> "$OUT/h200-decode.md"
  echo "== bench: csv ${STATUS[bench_csv]}, table ${STATUS[bench_table]}"
  cat "$OUT/h200-decode.md"
fi

# ---- large T (opt-in) ------------------------------------------------------------
if want_step large; then
  run_step large "$(limit "$TIMEOUT_LARGE")" "$OUT/large.log" "$OUT/large.log" \
    "$BUILD_DIR/tests/gpu/test_cuda" --large --group large
  sed -n '/^group /,/passed, [0-9]* failed/p' "$OUT/large.log"
fi

# ---- summary ----------------------------------------------------------------------
{
  echo "# device run $DATE"
  echo
  echo "| | |"
  echo "|---|---|"
  echo "| card | ${GPU:-nvidia-smi failed} (name, driver, memory, max SM clock) |"
  echo "| nvcc | ${NVCC:-not found} |"
  echo "| commit | $COMMIT ($DIRTY uncommitted paths) |"
  echo "| steps | $STEPS |"
  echo "| wall time | $((SECONDS - T0)) s |"
  echo
  echo "## steps"
  echo
  for s in build test sanitize bench_csv bench_table large; do
    [ -n "${STATUS[$s]:-}" ] && echo "- $s: ${STATUS[$s]}${SECS[$s]:+ (${SECS[$s]} s)}"
  done
  if [ -f "$OUT/ctest.log" ] && want_step test; then
    echo
    echo "## ctest"
    echo
    echo '```'
    grep -E 'tests passed|tests failed' "$OUT/ctest.log" | tail -n 1
    grep -E '^ *[0-9]+/[0-9]+ Test +#' "$OUT/ctest.log" | sed 's/^ *//'
    grep -A 30 'The following tests' "$OUT/ctest.log" | grep -v '^[0-9]*: ' | head -n 30
    echo '```'
    # test_cuda's own table (its lines carry the ctest test number as a prefix)
    num=$(grep -E '^ *[0-9]+/[0-9]+ Test +#[0-9]+: test_cuda ' "$OUT/ctest.log" | sed -E 's/.*#([0-9]+):.*/\1/' | head -1)
    if [ -n "$num" ]; then
      table=$(grep -E "^$num: " "$OUT/ctest.log" | sed -E "s/^$num: //" |
        sed -n -e '/^device 0:/p' -e '/^SKIP:/p' -e '/^group /,/passed, [0-9]* failed/p' -e '/^\(FAIL\|FATAL\)/p' |
        head -n 60)
      if [ -n "$table" ]; then
        echo
        echo "test_cuda:"
        echo '```'
        echo "$table"
        echo '```'
      fi
    fi
  fi
  if [ -f "$OUT/sanitize.log" ] && want_step sanitize; then
    echo
    echo "## compute-sanitizer"
    echo
    echo '```'
    sed -n '/^######## verdicts/,$p' "$OUT/sanitize.log" | tail -n +2
    echo '```'
  fi
  if [ -f "$OUT/large.log" ] && want_step large; then
    echo
    echo "## test_cuda --large --group large"
    echo
    echo '```'
    grep -E '^(FAIL|FATAL)' "$OUT/large.log" | head -n 20
    sed -n '/^group /,/passed, [0-9]* failed/p' "$OUT/large.log"
    echo '```'
  fi
  if want_step bench; then
    echo
    echo "## bench"
    echo
    rows=$(($(wc -l < "$OUT/h200-decode.csv" 2> /dev/null || echo 1) - 1))
    echo "- csv: ${STATUS[bench_csv]:-not run}, $((rows > 0 ? rows : 0)) rows -> h200-decode.csv"
    echo "- table: ${STATUS[bench_table]:-not run} -> h200-decode.md"
    if [ -s "$OUT/bench.log" ]; then
      echo
      echo '```'
      tail -n 15 "$OUT/bench.log"
      echo '```'
    fi
  fi
} > "$OUT/summary.md"

echo
echo "================ summary.md ================"
cat "$OUT/summary.md"
ls -la "$OUT"
