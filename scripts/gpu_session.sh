#!/usr/bin/env bash
# Runs on the GPU machine over a copy of the working tree, with the build made on the CPU machine
# carried as .carry/ (scripts/carry.sh). Stages: doctor, selftest, probe, tests, hostile, soak,
# campaign, bench (kernel, baseline and peers through bench/run.sh).
# Usage: scripts/gpu_session.sh STAGE... ; logs and JSON go to $OUT.
set -uo pipefail
root=$(pwd)
OUT=${OUT:-/tmp/ws_out}
mkdir -p "$OUT"
# The binaries carry the path they were built at (WS_SOURCE_DIR): give them that path here too.
built_at=$(grep -a -m1 -oE '/[A-Za-z0-9_./-]+/problems' .carry/warpsmith | head -1 | sed 's|/problems$||')
for p in /work/main ${built_at:+"$built_at"}; do
  if [[ $root != "$p" && ! -e $p ]]; then mkdir -p "$(dirname "$p")" && ln -sfn "$root" "$p"; fi
done
[[ -e build ]] || ln -sfn .carry build
missing=$(ldd build/warpsmith build/ws_runner build/ws_compile 2>/dev/null | grep "not found" || true)
if [[ -n $missing ]]; then
  echo "libraries missing here, using the carried ones: $missing"
  export LD_LIBRARY_PATH="$root/.carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
export PATH="/usr/local/cuda/bin:$PATH"
# Test binaries live in build/tests/, away from the bwrap carried beside warpsmith.
[[ -x .carry/bwrap && -z ${WARPSMITH_BWRAP:-} ]] && export WARPSMITH_BWRAP="$root/.carry/bwrap"
# The workspace (store, compile cache, scratch) stays off $OUT: only a copy of the store comes back.
WS_DIR=${WS_DIR:-/tmp/ws_session}
ws="build/warpsmith --workspace $WS_DIR"
status=0

for stage in "$@"; do
  echo "=== stage $stage ($(date -u +%H:%M:%S))"
  case $stage in
    doctor)
      $ws doctor || status=1 ;;
    selftest)
      evaluator/runner/gpu_selftest.sh build >"$OUT/selftest.log" 2>&1 || status=1
      tail -25 "$OUT/selftest.log" ;;
    probe)
      $ws device probe --json | tee "$OUT/probe.json" || status=1 ;;
    tests)
      for t in ${TESTS:-build/tests/*_test}; do
        "$t" --gtest_brief=1 >"$OUT/$(basename "$t").log" 2>&1 || { status=1; echo "FAILED: $t"; }
        tail -3 "$OUT/$(basename "$t").log"
      done ;;
    hostile)
      build/tests/hostile_gpu_test --gtest_brief=1 >"$OUT/hostile_gpu_test.log" 2>&1 || status=1
      grep -E "PASSED|FAILED|Failure" -A3 "$OUT/hostile_gpu_test.log" | head -60 ;;
    soak)
      WS_HOSTILE_SOAK=${SOAK_N:-500} build/tests/hostile_gpu_test \
        --gtest_filter='HostileSoakTest.*' >"$OUT/soak.log" 2>&1 || status=1
      grep -E "^soak:|PASSED|FAILED|Failure" -A2 "$OUT/soak.log" | head -30 ;;
    campaign)
      # The hand-tuned kernel first (the 100% mark, in the same store), then the tuner from the
      # plain starting kernel with a budget; then where it got and what it cost.
      $ws eval mxfp8_quantize_rowwise kernels/mxfp8_quantize_rowwise/kernel.cu \
        >"$OUT/campaign-reference.log" 2>&1 || status=1
      $ws campaign start --problems mxfp8_quantize_rowwise \
        --seed problems/mxfp8_quantize_rowwise/starting.cu --budget "${CAMPAIGN_BUDGET:-evaluations=100}" \
        >"$OUT/campaign.log" 2>&1 || status=1
      tail -20 "$OUT/campaign.log"
      $ws campaign status --json >"$OUT/campaign-status.json" || status=1
      bench/campaign_stats.py "$WS_DIR/warpsmith.db" \
        --reference-source kernels/mxfp8_quantize_rowwise/kernel.cu | tee "$OUT/campaign-stats.json"
      $ws leaderboard ;;
    problems)
      # The problem set: every GPU reference against its CPU reference, then the baseline and the
      # starting kernel of every problem evaluated and timed; one table of the results.
      # PROBLEMS limits the set (names); each params variant listed in PARAMS_<problem> runs too.
      mkdir -p "$OUT/problems"
      for spec in problems/*/spec.json; do
        p=$(basename "$(dirname "$spec")")
        [[ -n ${PROBLEMS:-} && " $PROBLEMS " != *" $p "* ]] && continue
        variants=$(python3 -c "
import json,itertools,sys; s=json.load(open(sys.argv[1])); ps=s.get('params',{})
names=sorted(ps); combos=itertools.product(*[ps[n]['values'] for n in names]) if names else [()]
print(' '.join(','.join(f'{n}={v}' for n,v in zip(names,c)) or '-' for c in combos))" "$spec")
        for v in $variants; do
          sets=(); key=$p
          if [[ $v != - ]]; then for kv in ${v//,/ }; do sets+=(--set "$kv"); done; key="$p@$v"; fi
          timeout 300 $ws problems verify "$p" "${sets[@]}" >"$OUT/problems/$key.verify.log" 2>&1
          echo "verify $key: rc $? $(tail -1 "$OUT/problems/$key.verify.log")"
          base=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['baseline'])" "$spec")
          [[ $base == cublaslt:* ]] || base=problems/$p/$base
          for which in baseline starting; do
            file=$base; [[ $which == starting ]] && file=problems/$p/$(python3 -c "
import json,sys; s=json.load(open(sys.argv[1])); print(s.get('starting_kernel') or s['baseline'])" "$spec")
            timeout 600 $ws eval "$p" "$file" "${sets[@]}" --json \
              >"$OUT/problems/$key.$which.json" 2>"$OUT/problems/$key.$which.err"
            echo "eval $key $which: rc $?"
          done
        done
      done
      bench/problem_table.py "$OUT/problems" --json "$OUT/problem-table.json" \
        --markdown "$OUT/problem-table.md" | tail -40
      ( cd "$OUT" && tar czf problems.tgz problems && rm -rf problems ) ;;
    profile)
      # Where an evaluation's wall time goes, with the sandbox and without it.
      for mode in strict off; do
        for hidden in "" --no-hidden; do
          start=$(date +%s%N)
          WARPSMITH_SANDBOX=$mode $ws eval mxfp8_quantize_rowwise \
            kernels/mxfp8_quantize_rowwise/kernel.cu $hidden >"$OUT/profile-$mode$hidden.log" 2>&1
          echo "eval sandbox=$mode $hidden: rc $? in $(( ($(date +%s%N) - start) / 1000000 )) ms"
          grep "seconds:" "$OUT/profile-$mode$hidden.log"
        done
      done
      for i in 1 2; do
        start=$(date +%s%N); build/ws_runner devices >/dev/null 2>&1
        echo "ws_runner devices (bare): $(( ($(date +%s%N) - start) / 1000000 )) ms"
      done ;;
    bench)
      # The kernel, the baseline and the peers in one run, merged with GPU, driver, date, command.
      OUT="$OUT/bench" bench/run.sh mxfp8_quantize_rowwise rounding rceil floor || status=1
      cp "$OUT/bench/bench-mxfp8_quantize_rowwise.json" "$OUT/" 2>/dev/null ;;
    *) echo "unknown stage $stage"; status=2 ;;
  esac
done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$OUT/gpu.csv"
cat "$OUT/gpu.csv"
# Few files come back from the GPU machine: logs travel as one archive, the store as one file.
[[ -f $WS_DIR/warpsmith.db ]] && sqlite_backup=$(python3 -c "
import sqlite3,sys; s=sqlite3.connect(sys.argv[1]); d=sqlite3.connect(sys.argv[2]); s.backup(d)
" "$WS_DIR/warpsmith.db" "$OUT/warpsmith.db" 2>&1)
( cd "$OUT" && ls *.log >/dev/null 2>&1 && tar czf logs.tgz *.log && rm -f *.log )
exit $status
