#!/usr/bin/env bash
# run_sweep (scripts/sweep_lib.sh) against a stand-in evaluator: every variant between the control
# and its repeat, each setting's arguments, and SWEEP_DEADLINE stopping before an evaluation, not
# inside one.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/sweep_lib.sh"
fail=0
check() { if [[ $2 != "$3" ]]; then echo "FAIL: $1: got '$2', want '$3'"; fail=1; fi; }

# The stand-in: logs its arguments, takes EVAL_S seconds, prints one ok case.
fake_eval() {
  echo "$*" >>"$OUT/calls.log"
  sleep "${EVAL_S:-0}"
  echo '{"verdict": "ok", "cases": [{"timing": {"median_us": 2.5}}]}'
}
ws=fake_eval

OUT=$(mktemp -d); trap 'rm -rf "$OUT"' EXIT
SWEEP_SEED=7 run_sweep p "rounding=floor rounding=rceil+variant=clamped" "A=1;A=2 B=3" 0 all "" \
  "M <= 64" >/dev/null
check "evaluations" "$(wc -l <"$OUT/calls.log")" 8
check "control first" "$(head -1 "$OUT/calls.log")" \
  "eval p kernels/p/kernel.cu --set rounding=floor --no-hidden --bench-where M <= 64 --input-seed 7 --json"
check "control again" "$(sed -n 4p "$OUT/calls.log")" "$(head -1 "$OUT/calls.log")"
check "two knobs, two parameters" "$(sed -n 7p "$OUT/calls.log")" \
  "eval p kernels/p/kernel.cu --set rounding=rceil --set variant=clamped --knob A=2 --knob B=3 --no-hidden --bench-where M <= 64 --input-seed 7 --json"

# SWEEP_SEED=drawn: one seed drawn for the whole sweep; without SWEEP_SEED, none passed.
rm -f "$OUT/calls.log"
SWEEP_SEED=drawn run_sweep p - "A=1;A=2" 1 drawn >/dev/null
check "one drawn seed" "$(grep -o -- '--input-seed [0-9]*' "$OUT/calls.log" | sort -u | wc -l)" 1
check "on every evaluation" "$(grep -c -- '--input-seed' "$OUT/calls.log")" 4
rm -f "$OUT/calls.log"
run_sweep p - "A=1" 1 fresh >/dev/null
check "fresh inputs" "$(grep -c -- '--input-seed' "$OUT/calls.log")" 0
check "archive" "$(tar tzf "$OUT/all.tgz" | grep -c '\.json$')" 8
check "the repeat's file" \
  "$(tar tzf "$OUT/all.tgz" | grep -c 'prounding-rceil__variant-clamped_again\.json$')" 1
check "not cut" "$sweep_cut" 0

# @file=PATH: that kernel file, the rest of the words as knobs, the file named in its JSON; the
# controls keep the problem's kernel.
rm -f "$OUT/calls.log"
run_sweep p - "@file=old/k.cu;@file=old/k.cu A=2" 0 files >/dev/null
check "the file's evaluation" "$(sed -n 2p "$OUT/calls.log")" \
  "eval p old/k.cu --no-hidden --json"
check "the file with a knob" "$(sed -n 3p "$OUT/calls.log")" \
  "eval p old/k.cu --knob A=2 --no-hidden --json"
check "controls keep the kernel" "$(sed -n '1p;4p' "$OUT/calls.log" | sort -u)" \
  "eval p kernels/p/kernel.cu --no-hidden --json"
check "named in the JSON" "$(tar xzf "$OUT/files.tgz" -O sweep/p-_@file-old-k.cu_A-2.json |
  python3 -c 'import json,sys; print(json.load(sys.stdin).get("kernel_file"))')" "old/k.cu"
check "controls unnamed" "$(tar xzf "$OUT/files.tgz" -O sweep/p-_again.json |
  python3 -c 'import json,sys; print(json.load(sys.stdin).get("kernel_file"))')" "None"

# A deadline already past: nothing starts, the cut is reported.
rm -f "$OUT/calls.log"
SWEEP_DEADLINE=$(($(date +%s) - 1)) run_sweep p - "A=1" 1 none >/dev/null
check "past deadline" "$( [[ -e $OUT/calls.log ]] && wc -l <"$OUT/calls.log" || echo 0)" 0
check "past deadline cut" "$sweep_cut" 1

# Evaluations of 1 s and a deadline 1.5 s away: the control and one variant run, the rest wait.
rm -f "$OUT/calls.log"
EVAL_S=1 SWEEP_DEADLINE=$(($(date +%s) + 2)) run_sweep p - "A=1;A=2;A=3" 1 part >"$OUT/part.txt"
n=$(wc -l <"$OUT/calls.log")
if (( n < 1 || n > 3 )); then echo "FAIL: deadline: $n evaluations"; fail=1; fi
check "deadline cut" "$sweep_cut" 1
check "what ran is archived" "$(tar tzf "$OUT/part.tgz" | grep -c '\.json$')" "$n"
check "cut reported" "$(grep -c 'not started: deadline' "$OUT/part.txt")" 1

(( fail )) || echo "sweep_lib_test: ok"
exit $fail
