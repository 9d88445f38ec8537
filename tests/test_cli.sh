#!/bin/sh
# test_cli.sh - the moeroute command end to end:
#   1. `moeroute route` on every golden case (args.txt, paths made absolute):
#      every output file equals expected/ (ints exactly, floats 1e-5 relative),
#      and no file more or less;
#   2. bad input: non-zero exit, a one-line message on stderr, no output left
#      in --out (not even partial files);
#   3. `moeroute models` lists exactly the presets of data/models.tsv;
#   4. `moeroute info` runs; `moeroute verify --count 200` ends "N passed, 0 failed".
#
# usage: test_cli.sh MOEROUTE NPY_COMPARE GOLDEN_DIR MODELS_TSV WORK_DIR
#
# Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
set -u

if [ $# -ne 5 ]; then
  echo "usage: $0 MOEROUTE NPY_COMPARE GOLDEN_DIR MODELS_TSV WORK_DIR" >&2
  exit 2
fi
CLI=$1
CMP=$2
GOLDEN=$3
MODELS=$4
WORK=$5

passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok   $1"; }
bad() { failed=$((failed + 1)); echo "FAIL $1"; }

rm -rf "$WORK"
mkdir -p "$WORK" || exit 2

# ---- 1. golden round trips ------------------------------------------------------

golden_case() {
  dir=$1
  name=$(basename "$dir")
  out="$WORK/golden/$name"
  # rebuild the argument list with absolute input paths
  set --
  prev=""
  for w in $(cat "$dir/args.txt"); do
    case "$prev" in
      --logits|--bias|--expert-mask) w="$dir/$w" ;;
    esac
    set -- "$@" "$w"
    prev=$w
  done
  "$CLI" route "$@" --out "$out" >"$WORK/$name.stdout" 2>"$WORK/$name.stderr"
  rc=$?
  if [ "$rc" -ne 0 ]; then
    bad "route $name: exit status $rc ($(head -c 300 "$WORK/$name.stderr"))"
    return
  fi
  errs=""
  for want in "$dir"/expected/*.npy; do
    f=$(basename "$want")
    if [ ! -f "$out/$f" ]; then
      errs="$errs missing $f;"
    elif ! "$CMP" "$out/$f" "$want" 1e-5 2>>"$WORK/$name.cmp"; then
      errs="$errs $f differs;"
    fi
  done
  for got in "$out"/*; do
    f=$(basename "$got")
    [ -f "$dir/expected/$f" ] || errs="$errs unexpected $f;"
  done
  if [ -z "$errs" ]; then
    ok "route $name"
  else
    bad "route $name:$errs $(head -c 400 "$WORK/$name.cmp" 2>/dev/null)"
  fi
}

ncases=0
for d in "$GOLDEN"/*/; do
  d=${d%/}
  [ -f "$d/args.txt" ] || continue
  ncases=$((ncases + 1))
  golden_case "$d"
done
if [ "$ncases" -ge 16 ]; then ok "golden cases found: $ncases"; else bad "golden cases found: $ncases (want 16)"; fi

# ---- 2. bad input -------------------------------------------------------------------

L256="$GOLDEN/softmax_renorm_bf16/logits.npy"   # bf16 bits [16, 256]
B384="$GOLDEN/sigmoid_bias_kimi_e384/bias.npy"  # float32 [384]
I32="$GOLDEN/softmax_renorm_bf16/expected/topk_ids.npy" # int32: not a logits dtype

# expect_fail NAME OUTDIR ARGS...: non-zero exit, exactly one stderr line, OUTDIR
# absent or empty afterwards.
expect_fail() {
  tname=$1
  o=$2
  shift 2
  "$CLI" "$@" >"$WORK/fail.stdout" 2>"$WORK/fail.stderr"
  rc=$?
  lines=$(wc -l <"$WORK/fail.stderr" | tr -d ' ')
  left=""
  if [ -d "$o" ]; then left=$(ls -A "$o"); fi
  if [ "$rc" -eq 0 ]; then
    bad "$tname: exit status 0"
  elif [ "$lines" -ne 1 ] || [ ! -s "$WORK/fail.stderr" ]; then
    bad "$tname: $lines lines on stderr: $(head -c 300 "$WORK/fail.stderr")"
  elif [ -n "$left" ]; then
    bad "$tname: left in --out: $left"
  else
    ok "$tname (exit $rc: $(cat "$WORK/fail.stderr"))"
  fi
}

O="$WORK/bad_out"
expect_fail "unknown option" "$O" route --logits "$L256" --out "$O" --topk 8 --bogus 1
expect_fail "missing --logits" "$O" route --out "$O" --topk 8
expect_fail "missing --out" "$O" route --logits "$L256" --topk 8
expect_fail "missing --topk" "$O" route --logits "$L256" --out "$O"
expect_fail "--topk 0" "$O" route --logits "$L256" --out "$O" --topk 0
expect_fail "--topk abc" "$O" route --logits "$L256" --out "$O" --topk abc
expect_fail "--topk 33" "$O" route --logits "$L256" --out "$O" --topk 33
expect_fail "--topk 9 with E = 8" "$O" route --logits "$GOLDEN/k_equals_e_u1/logits.npy" --out "$O" --topk 9
expect_fail "--topk without a value" "$O" route --logits "$L256" --out "$O" --topk
expect_fail "int32 logits file" "$O" route --logits "$I32" --out "$O" --topk 2
expect_fail "bias of 384 for E = 256" "$O" route --logits "$L256" --out "$O" --topk 8 --bias "$B384"
expect_fail "mask of 257 for E = 256" "$O" route --logits "$L256" --out "$O" --topk 8 \
  --expert-mask "$GOLDEN/expert_mask_half/expert_mask.npy"
expect_fail "--groups 7:2 with E = 256" "$O" route --logits "$L256" --out "$O" --topk 8 --groups 7:2
expect_fail "--groups 8:0" "$O" route --logits "$L256" --out "$O" --topk 8 --groups 8:0
expect_fail "--groups 8" "$O" route --logits "$L256" --out "$O" --topk 8 --groups 8
expect_fail "--score bogus" "$O" route --logits "$L256" --out "$O" --topk 8 --score bogus
expect_fail "--layout bogus" "$O" route --logits "$L256" --out "$O" --topk 8 --layout bogus
expect_fail "--unit-size 0" "$O" route --logits "$L256" --out "$O" --topk 8 --unit-size 0
expect_fail "--unit-size 1025" "$O" route --logits "$L256" --out "$O" --topk 8 --unit-size 1025
expect_fail "--scale nan" "$O" route --logits "$L256" --out "$O" --topk 8 --scale nan
expect_fail "--model unknown" "$O" route --logits "$L256" --out "$O" --model no-such-model
expect_fail "nonexistent logits file" "$O" route --logits "$WORK/does/not/exist.npy" --out "$O" --topk 8
expect_fail "nonexistent bias file" "$O" route --logits "$L256" --out "$O" --topk 8 --bias "$WORK/nope.npy"
printf 'not an npy file\n' >"$WORK/garbage.npy"
expect_fail "garbage .npy" "$O" route --logits "$WORK/garbage.npy" --out "$O" --topk 8
# truncated .npy: the header of a real file without its data
head -c 200 "$L256" >"$WORK/truncated.npy"
expect_fail "truncated .npy" "$O" route --logits "$WORK/truncated.npy" --out "$O" --topk 8
# --out that cannot be a folder: below a regular file, or an existing file
printf 'x' >"$WORK/a_file"
expect_fail "--out below a regular file" "$WORK/a_file/out" route --logits "$L256" --out "$WORK/a_file/out" --topk 8
expect_fail "--out is a regular file" "$WORK/none" route --logits "$L256" --out "$WORK/a_file" --topk 8
[ "$(cat "$WORK/a_file")" = "x" ] && ok "--out regular file untouched" || bad "--out regular file was modified"
# a write that fails half-way: one output name is taken by a folder, so the
# files written before it must be removed again (nothing partial left)
P="$WORK/partial"
mkdir -p "$P/sorted_weights.npy/keep"
"$CLI" route --logits "$L256" --out "$P" --topk 8 >"$WORK/partial.stdout" 2>"$WORK/partial.stderr"
rc=$?
left=$(ls -A "$P")
if [ "$rc" -ne 0 ] && [ "$left" = "sorted_weights.npy" ] && [ -d "$P/sorted_weights.npy/keep" ]; then
  ok "write failing half-way leaves nothing (exit $rc: $(head -n 1 "$WORK/partial.stderr"))"
else
  bad "write failing half-way: exit $rc, left in --out: $left ($(head -c 300 "$WORK/partial.stderr"))"
fi
# unknown command, no command
"$CLI" frobnicate >/dev/null 2>&1 && bad "unknown command: exit 0" || ok "unknown command: non-zero exit"
"$CLI" >/dev/null 2>&1 && bad "no command: exit 0" || ok "no command: non-zero exit"

# ---- 3. models ------------------------------------------------------------------------

if "$CLI" models >"$WORK/models.out" 2>"$WORK/models.err"; then
  # names: the first column after the header line
  tail -n +2 "$WORK/models.out" | awk 'NF { print $1 }' | sort >"$WORK/models.cli"
  grep -v '^#' "$MODELS" | tail -n +2 | awk -F '\t' 'NF { print $1 }' | sort >"$WORK/models.tsv"
  if [ -s "$WORK/models.tsv" ] && cmp -s "$WORK/models.cli" "$WORK/models.tsv"; then
    ok "models lists the $(wc -l <"$WORK/models.tsv" | tr -d ' ') presets of models.tsv"
  else
    bad "models: names differ from models.tsv: $(diff "$WORK/models.cli" "$WORK/models.tsv" | head -c 300)"
  fi
else
  bad "models: exit status $?"
fi

# ---- 4. info, verify, version ------------------------------------------------------------

if "$CLI" info >"$WORK/info.out" 2>&1 && [ -s "$WORK/info.out" ]; then
  ok "info"
else
  bad "info: $(head -c 300 "$WORK/info.out")"
fi
if "$CLI" --version >"$WORK/version.out" 2>&1 && grep -q '^moeroute [0-9]*\.[0-9]*\.[0-9]*' "$WORK/version.out"; then
  ok "--version: $(cat "$WORK/version.out")"
else
  bad "--version: $(head -c 200 "$WORK/version.out")"
fi
"$CLI" verify --count 200 >"$WORK/verify.out" 2>&1
rc=$?
last=$(tail -n 1 "$WORK/verify.out")
if [ "$rc" -eq 0 ] && echo "$last" | grep -Eq '^[0-9]+ passed, 0 failed$'; then
  ok "verify --count 200: $last"
else
  bad "verify --count 200: exit $rc, last line '$last'"
  tail -n 20 "$WORK/verify.out"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
