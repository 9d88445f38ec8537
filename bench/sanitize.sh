#!/usr/bin/env bash
# bench/sanitize.sh - the CUDA backend under compute-sanitizer (memcheck, racecheck,
# synccheck, initcheck), each on a reduced run of tests/gpu/test_cuda.
#
# Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
#
# usage: bash bench/sanitize.sh [BUILD_DIR] [LOG]
#   BUILD_DIR  a build with the CUDA backend and tests (default build-dev)
#   LOG        the combined log (default $OUT/sanitize.log, else ./sanitize.log)
#
# The log ends with one verdict line per tool, e.g.
#   memcheck: ERROR SUMMARY: 0 errors
# (or "memcheck: TIMEOUT ...", "memcheck: NOT RUN ..."), each followed by an indented
# detail line (the test's own result, exit status, seconds).
#
# Environment:
#   SANITIZE_TOOLS      tools to run (default "memcheck memcheck_nopdl racecheck_nocluster racecheck_pdl
#                       synccheck synccheck_nopdl initcheck")
#   SANITIZE_TIMEOUT    seconds per tool (default 150)
#   SANITIZE_PARALLEL   1 (default): the tools run at the same time, one process each
#                       (the sanitizers are host-bound; the GPU has room for all of them)
#   SANITIZE_ARGS_<tool> test_cuda arguments for one tool, replacing the defaults below
#                       (including a suffix's --no-pdl / --no-cluster: repeat them there)
#   COMPUTE_SANITIZER   path of compute-sanitizer (default: PATH, then /usr/local/cuda/bin)
# Exit status: 0 when every tool ran and reported 0 errors, else 1.
set -u

BUILD_DIR=${1:-build-dev}
LOG=${2:-${OUT:-.}/sanitize.log}
TOOLS=${SANITIZE_TOOLS:-memcheck memcheck_nopdl racecheck_nocluster racecheck_pdl synccheck synccheck_nopdl initcheck}
TIMEOUT_S=${SANITIZE_TIMEOUT:-150}
PARALLEL=${SANITIZE_PARALLEL:-1}
BIN=$BUILD_DIR/tests/gpu/test_cuda

# Default reduced runs. memcheck/initcheck: every buffer its own exact allocation, so
# an access one element past any buffer is reported (the test's canaries cannot see reads).
# initcheck also gets a never-written workspace per call. racecheck/synccheck instrument
# every shared-memory access and barrier: fewer random configurations, T <= 2048.
# racecheck hangs in route's cluster kernel (its st.async/mbarrier exchange; run 7: with
# that kernel off it was clean, both with MOEROUTE_PDL=0 (127 quick cases) and with PDL on
# (the graph group only); with the kernel, PDL off, it hangs at the first launch). So the
# defaults are racecheck_nocluster (--no-cluster, MOEROUTE_PDL=0, as in run 7) and
# racecheck_pdl (--no-cluster, PDL on: the default decode path, gate kernel + one-launch
# sort; not yet run on the quick set); "racecheck" (with the kernel, PDL off) stays
# available by name. The default dispatch takes the cluster kernel only without PDL, so
# memcheck_nopdl and synccheck_nopdl (test_cuda --no-pdl) cover it. A name "tool_suffix"
# runs compute-sanitizer --tool tool. -v: the last case line shows where a timeout hit.
default_args() {
  case $1 in
    memcheck) echo "--quick --exact-allocs" ;;
    initcheck) echo "--quick --exact-allocs --ws-uninit" ;;
    racecheck) echo "--quick --configs 20 --max-tokens 2048 -v" ;;
    memcheck_nopdl) echo "--quick --exact-allocs --no-pdl" ;;
    synccheck_nopdl) echo "--quick --configs 20 --max-tokens 2048 --no-pdl" ;;
    racecheck_nocluster) echo "--quick --configs 20 --max-tokens 2048 --no-cluster -v" ;;
    racecheck_pdl) echo "--quick --configs 20 --max-tokens 2048 --no-cluster -v" ;;
    synccheck) echo "--quick --configs 20 --max-tokens 2048" ;;
    *) echo "--quick" ;;
  esac
}
tool_flags() {
  case $1 in
    memcheck) echo "--leak-check full" ;;
    *) echo "" ;;
  esac
}

CS=${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || true)}
if [ -z "$CS" ] && [ -x /usr/local/cuda/bin/compute-sanitizer ]; then CS=/usr/local/cuda/bin/compute-sanitizer; fi

mkdir -p "$(dirname "$LOG")"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

{
  echo "# compute-sanitizer on test_cuda ($(date -u +%Y-%m-%dT%H:%M:%SZ))"
  echo "# binary: $BIN"
  echo "# compute-sanitizer: ${CS:-not found} $([ -n "$CS" ] && "$CS" --version 2>/dev/null | grep -i version | head -1)"
} > "$LOG"

run_tool() { # tool -> $TMP/tool.log, $TMP/tool.rc, $TMP/tool.sec
  local tool=$1 var="SANITIZE_ARGS_$1" args real=${1%%_*} envs=""
  args=${!var:-$(default_args "$tool")}
  [ "$real" = racecheck ] && [ "$tool" != racecheck_pdl ] && envs="MOEROUTE_PDL=0"
  local t0=$SECONDS
  echo "\$ $envs $CS --tool $real $(tool_flags "$real") --error-exitcode 3 $BIN $args" > "$TMP/$tool.log"
  # shellcheck disable=SC2086,SC2046 # word splitting of the argument lists is wanted
  env $envs timeout -k 10 "$TIMEOUT_S" "$CS" --tool "$real" $(tool_flags "$real") --error-exitcode 3 "$BIN" $args \
    >> "$TMP/$tool.log" 2>&1
  echo $? > "$TMP/$tool.rc"
  echo $((SECONDS - t0)) > "$TMP/$tool.sec"
  echo "$args" > "$TMP/$tool.args"
}

not_run() { # reason: a verdict for every tool, then exit 1
  { echo; echo "######## verdicts ########"; for tool in $TOOLS; do echo "$tool: NOT RUN ($1)"; done; } | tee -a "$LOG"
  exit 1
}
status=0
[ -n "$CS" ] || not_run "compute-sanitizer not found"
[ -x "$BIN" ] || not_run "$BIN missing: build with the CUDA backend and tests"

if [ "$PARALLEL" = 1 ]; then
  pids=()
  for tool in $TOOLS; do run_tool "$tool" & pids+=($!); done
  for p in "${pids[@]}"; do wait "$p"; done
else
  for tool in $TOOLS; do run_tool "$tool"; done
fi

verdicts=""
for tool in $TOOLS; do
  rc=$(cat "$TMP/$tool.rc" 2>/dev/null || echo "?")
  sec=$(cat "$TMP/$tool.sec" 2>/dev/null || echo "?")
  {
    echo
    echo "######## $tool (exit $rc, ${sec} s) ########"
    # keep the log readable: the sanitizer's reports in full, the test's output trimmed
    # to its failures and summary table
    grep -v '^  \[' "$TMP/$tool.log" | head -c 2000000
  } >> "$LOG"
  summary=$(grep -E -o '(ERROR SUMMARY|RACECHECK SUMMARY): .*' "$TMP/$tool.log" | grep 'ERROR SUMMARY' | tail -1)
  [ -z "$summary" ] && summary=$(grep -E -o 'RACECHECK SUMMARY: .*' "$TMP/$tool.log" | tail -1)
  testline=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$TMP/$tool.log" | tail -1)
  skipped=$(grep -m1 '^SKIP:' "$TMP/$tool.log")
  if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
    lastcase=$(grep '^  \[' "$TMP/$tool.log" | tail -1 | cut -c1-160)
    v="$tool: TIMEOUT after ${TIMEOUT_S} s${summary:+ (last: $summary)}${lastcase:+; last case started:$lastcase}"
    status=1
  elif [ -n "$skipped" ]; then
    v="$tool: NOT RUN (test skipped: ${skipped#SKIP: })"
    status=1
  elif [ -n "$summary" ]; then
    v="$tool: $summary"
    echo "$summary" | grep -Eq '(: |\()0 errors' || status=1
  else
    v="$tool: NO SUMMARY (exit $rc; see the log)"
    status=1
  fi
  [ "$rc" != 0 ] && status=1
  verdicts+="$v"$'\n'"  $tool details: test_cuda $(cat "$TMP/$tool.args"): ${testline:-no test result}; exit $rc; ${sec} s"$'\n'
done

{
  echo
  echo "######## verdicts ########"
  printf '%s' "$verdicts"
} >> "$LOG"
printf '%s' "$verdicts"
exit $status
