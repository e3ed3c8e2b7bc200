#!/usr/bin/env bash
# Runs on the GPU machine over a copy of the working tree, with the build made on the CPU machine
# carried as .carry/ (scripts/carry.sh). Stages: doctor, selftest, probe, tests, hostile, soak,
# campaign, problems, kernels, peers, export, dashboard, multigpu, sweep, queue, ncu, harness,
# dumps, overlap, trace, timeline, libpair, profile, bench, bandwidth, floors.
# Usage: scripts/gpu_session.sh [NAME=a,b] STAGE... ; logs and JSON go to $OUT.
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

# The parameter settings of a problem, one word each: NAME=V,NAME=V (or - without parameters).
variants() {
  python3 -c "
import json,itertools,sys; s=json.load(open(sys.argv[1])); ps=s.get('params',{})
names=sorted(ps); combos=itertools.product(*[ps[n]['values'] for n in names]) if names else [()]
print(' '.join(','.join(f'{n}={v}' for n,v in zip(names,c)) or '-' for c in combos))" "$1"
}

# The settings of spec $1 (words of `variants`) that SETTINGS selects: words like form=wgrad or
# rounding=floor+variant=clamped (a setting's pairs joined by +); all when SETTINGS is unset.
wanted_variants() {
  local v
  for v in $(variants "$1"); do
    [[ -n ${SETTINGS:-} && $v != - && " $SETTINGS " != *" ${v//,/+} "* ]] && continue
    echo "$v"
  done
}

# One parameter setting of problem $1 (a word of `variants`): sets the --set arguments in `sets`
# and the file key in `key` (<problem>[__<name>-<value>...]: only plain characters travel back).
setting() {
  sets=(); key=$1
  [[ $2 == - ]] && return
  for kv in ${2//,/ }; do sets+=(--set "$kv"); done
  key="${1}__$(echo "$2" | sed 's/=/-/g; s/,/__/g')"
}

# The hand-tuned kernels to run: KERNELS in its own order (so a call cut by its time limit has
# run the first ones named), else every kernels/<problem>/kernel.cu.
kernel_files() {
  local p
  if [[ -z ${KERNELS:-} ]]; then ls kernels/*/kernel.cu; return; fi
  # Spaces or commas: KERNELS=a,b in the environment means what the stage word KERNELS=a,b does.
  for p in ${KERNELS//,/ }; do
    if [[ -f kernels/$p/kernel.cu ]]; then echo "kernels/$p/kernel.cu"
    else echo "KERNELS: no kernels/$p/kernel.cu" >&2; fi
  done
}

# The verdict, geomean and message of an `eval --json` output, for the log.
verdict() {
  python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print(j.get('verdict'), j.get('geomean_us'), j.get('deep') or '', str(j.get('message',''))[:300])" "$1" 2>/dev/null
}

# Where an `eval --json` output's ($1) seconds went: the phases beyond the timed runs.
phases() {
  python3 -c "import json,sys; p=json.load(open(sys.argv[1])).get('phase_seconds',{}); print(' '.join(f'{k} {p[k]:.2f}' for k in ('total','reference_run','candidate_run','runner_case_dump','runner_case_timing','check') if k in p))" "$1" 2>/dev/null
}

# Removes the scratch folder an `eval --keep-scratch --json` output ($1) kept: it holds the
# problem's tensors (hundreds of MB at the bench shapes).
drop_kept_scratch() {
  local d
  d=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1])).get('kept_scratch') or '')" "$1" 2>/dev/null)
  [[ -n $d && -d $d ]] && rm -rf "$d"
  return 0
}

# run_sweep: one knob sweep through the evaluator (scripts/sweep_lib.sh).
source "$root/scripts/sweep_lib.sh"

for stage in "$@"; do
  # A word NAME=a,b sets NAME="a b" for the stages after it (one chain of gpu_pair.sh each).
  if [[ $stage =~ ^[A-Z_][A-Z0-9_]*= ]]; then
    export "${stage%%=*}=$(echo "${stage#*=}" | tr , ' ')"; continue
  fi
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
      # HOSTILE_FILTER: a gtest filter (e.g. '*g21*'); default every case but the soak.
      build/tests/hostile_gpu_test --gtest_brief=1 --gtest_filter="${HOSTILE_FILTER:-*}" \
        >"$OUT/hostile_gpu_test.log" 2>&1 || status=1
      grep -E "PASSED|FAILED|Failure" -A3 "$OUT/hostile_gpu_test.log" | head -60 ;;
    dumps)
      # The runner's dumps, A/B on one host: build/ws_runner against DUMPS_RUNNER_B (default
      # build/ws_runner_b, carried beside it), DUMPS_ROUNDS (default 3) rounds alternating the
      # two over DUMPS_PROBLEMS; verdicts and phases to $OUT/dumps/.
      mkdir -p "$OUT/dumps"
      b=${DUMPS_RUNNER_B:-build/ws_runner_b}
      if [[ ! -x $b ]]; then echo "dumps: no runner B at $b"; status=1; continue; fi
      cp build/ws_runner /tmp/ws_runner_a && cp "$b" /tmp/ws_runner_b
      for r in $(seq 1 "${DUMPS_ROUNDS:-3}"); do
        for p in ${DUMPS_PROBLEMS:-rmsnorm_quantize bf16_gemm}; do
          for which in a b; do
            cp "/tmp/ws_runner_$which" build/ws_runner
            f="$OUT/dumps/$p.$which.$r.json"
            $ws eval "$p" "kernels/$p/kernel.cu" --json >"$f" 2>"${f%.json}.err"
            echo "dumps $p runner $which round $r: $(verdict "$f"); $(phases "$f")"
          done
        done
      done
      cp /tmp/ws_runner_a build/ws_runner ;;
    overlap)
      # The candidate runner's start-up overlapped with the reference (the default;
      # evaluator/gpu_lock.h's TurnGate) against the serial order (WARPSMITH_OVERLAP_RUNNERS=0):
      # OVERLAP_PROBLEMS (default three kernels), OVERLAP_ROUNDS (default 3) rounds alternating
      # the two, verdicts and times to $OUT/overlap/.
      mkdir -p "$OUT/overlap"
      for r in $(seq 1 "${OVERLAP_ROUNDS:-3}"); do
        for p in ${OVERLAP_PROBLEMS:-mxfp8_quantize_rowwise rmsnorm_quantize bf16_gemm}; do
          for mode in serial overlap; do
            f="$OUT/overlap/$p.$mode.$r.json"
            t0=$(date +%s.%N)
            WARPSMITH_OVERLAP_RUNNERS=$([[ $mode == overlap ]] && echo 1 || echo 0) \
              $ws eval "$p" "kernels/$p/kernel.cu" --json >"$f" 2>"${f%.json}.err"
            wall=$(python3 -c "print(round($(date +%s.%N) - $t0, 2))")
            echo "overlap $p $mode round $r: $(verdict "$f") wall $wall s; $(phases "$f")"
          done
        done
      done ;;
    soak)
      # SOAK_GPUS=0,1 spreads the jobs over those GPUs; without it (and outside --pair, which
      # gives each list one GPU) the soak uses every GPU of the host. One runner per GPU does GPU
      # work at a time (evaluator/gpu_lock.h), so GPUs, not jobs, set the pace: about 1 s of
      # exclusive GPU time per hostile evaluation on an H200 (500 in 500 s, 2026-12-01).
      if [[ -z ${SOAK_GPUS:-} && -z ${CUDA_VISIBLE_DEVICES:-} ]]; then
        SOAK_GPUS=$(nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null | paste -sd, -)
      fi
      [[ -n ${SOAK_GPUS:-} ]] && export WS_HOSTILE_SOAK_GPUS=${SOAK_GPUS// /,}
      echo "soak on GPU(s) ${WS_HOSTILE_SOAK_GPUS:-${CUDA_VISIBLE_DEVICES:-default}}"
      WS_HOSTILE_SOAK=${SOAK_N:-500} WS_HOSTILE_SOAK_JOBS=${SOAK_JOBS:-8} build/tests/hostile_gpu_test \
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
      # PROBLEMS limits the set (names), SETTINGS the parameter settings (as in `kernels`).
      mkdir -p "$OUT/problems"
      todo=()  # "problem setting" words
      for spec in problems/*/spec.json; do
        p=$(basename "$(dirname "$spec")")
        [[ -n ${PROBLEMS:-} && " ${PROBLEMS//,/ } " != *" $p "* ]] && continue
        for v in $(wanted_variants "$spec"); do todo+=("$p $v"); done
      done
      # The verifications first, VERIFY_JOBS at a time (they time nothing; the CPU references
      # dominate), each in a workspace of its own, so the timed evaluations after them run alone
      # on the GPU. PROBLEM_VERIFY=0 skips them (settings verified in an earlier call).
      [[ ${PROBLEM_VERIFY:-1} == 0 ]] || for pv in "${todo[@]}"; do
        read -r p v <<<"$pv"
        while (( $(jobs -rp | wc -l) >= ${VERIFY_JOBS:-4} )); do wait -n; done
        setting "$p" "$v"
        ( timeout 300 build/warpsmith --workspace "$WS_DIR/verify-$key" problems verify "$p" \
            "${sets[@]}" >"$OUT/problems/$key.verify.log" 2>&1
          echo "$(date -u +%T) verify $key: rc $? $(tail -1 "$OUT/problems/$key.verify.log")" ) &
      done
      wait
      # PROBLEM_ITERS timed launches per bench shape (0: the protocol's own count): the table
      # needs medians, not a ranking, and naive baselines run 100x under SOL.
      iters=(); [[ ${PROBLEM_ITERS:-20} != 0 ]] && iters=(--iterations "${PROBLEM_ITERS:-20}")
      for pv in "${todo[@]}"; do
        read -r p v <<<"$pv"
        setting "$p" "$v"
        # The baseline (a file, or a library call like cublaslt:bf16_gemm) and the starting kernel.
        read -r base start < <(python3 -c "
import json,sys; s=json.load(open(sys.argv[1]))
print(s['baseline'], s.get('starting_kernel') or s['baseline'])" "problems/$p/spec.json")
        [[ $base == cublaslt:* ]] || base=problems/$p/$base
        # PROBLEM_ROLES limits the evaluations (default: "baseline starting").
        for which in ${PROBLEM_ROLES:-baseline starting}; do
          file=$base; [[ $which == starting ]] && file=problems/$p/$start
          timeout 150 $ws eval "$p" "$file" "${sets[@]}" "${iters[@]}" --json \
            >"$OUT/problems/$key.$which.json" 2>"$OUT/problems/$key.$which.err"
          echo "$(date -u +%T) eval $key $which: rc $? $(verdict "$OUT/problems/$key.$which.json")"
        done
      done
      bench/problem_table.py "$OUT/problems" --json "$OUT/problem-table.json" \
        --markdown "$OUT/problem-table.md" | tail -40
      ( cd "$OUT" && tar czf "problems-$(date -u +%H%M%S).tgz" problems && rm -rf problems ) ;;
    kernels)
      # The hand-tuned set: every kernels/<problem>/kernel.cu in every parameter setting (KERNELS
      # limits the problems and sets their order), then the peers of each (PEERS=0 skips them). Raw JSON to
      # $OUT/kernels; bench/kernel_table.py makes the table. DEEP=1: instead, the test shapes
      # only, under compute-sanitizer (eval --deep --no-bench --no-hidden), no peers.
      mkdir -p "$OUT/kernels"
      deep=(); [[ ${DEEP:-0} == 1 ]] && deep=(--deep --no-bench --no-hidden)
      for k in $(kernel_files); do
        p=$(basename "$(dirname "$k")")
        for v in $(wanted_variants "problems/$p/spec.json"); do  # SETTINGS limits them
          setting "$p" "$v"
          timeout "${KERNEL_TIMEOUT:-150}" $ws eval "$p" "$k" "${sets[@]}" "${deep[@]}" --json \
            >"$OUT/kernels/$key.json" 2>"$OUT/kernels/$key.err"
          echo "$(date -u +%T) eval $key: rc $? $(verdict "$OUT/kernels/$key.json")"
        done
        if [[ ${PEERS:-1} != 0 && ${DEEP:-0} != 1 && -f bench/peers/$p.py ]]; then
          timeout 400 python3 "bench/peers/$p.py" "$OUT/kernels/$p.peers.json" \
            >"$OUT/kernels/$p.peers.log" 2>&1
          echo "peers $p: rc $?"; tail -2 "$OUT/kernels/$p.peers.log"
        fi
      done
      ( cd "$OUT" && tar czf "kernels-$(date -u +%H%M%S).tgz" kernels && rm -rf kernels ) ;;
    peers)
      # Only the peers of the hand-tuned set (KERNELS limits the problems), raw JSON to $OUT/peers.
      mkdir -p "$OUT/peers"
      for k in $(kernel_files); do
        p=$(basename "$(dirname "$k")")
        [[ -f bench/peers/$p.py ]] || continue
        timeout 400 python3 "bench/peers/$p.py" "$OUT/peers/$p.peers.json" >"$OUT/peers/$p.log" 2>&1
        echo "peers $p: rc $?"; tail -2 "$OUT/peers/$p.log"
      done ;;
    export)
      # The exported forms on the GPU: the hand-tuned rowwise quantizer in both rounding modes as
      # a CMake package (its test: bit-exact against the CPU reference; --bench: timed) and a
      # torch extension (test_ops.py against `warpsmith reference`; --bench), then bundles
      # re-checked and re-timed by `warpsmith verify`.
      X=$WS_DIR/export; rm -rf "$X"; mkdir -p "$X"
      for r in rceil floor; do
        $ws eval mxfp8_quantize_rowwise kernels/mxfp8_quantize_rowwise/kernel.cu --set rounding=$r \
          --json >"$OUT/export-eval-$r.json" 2>"$OUT/export-eval-$r.log" || status=1
      done
      $ws export --problem mxfp8_quantize_rowwise --format cmake --out "$X/pkg" >"$OUT/export-cmake.log" 2>&1
      { cmake -S "$X/pkg" -B "$X/pkg-build" -DCMAKE_CUDA_COMPILER="$(command -v nvcc)" \
          -DCMAKE_CUDA_ARCHITECTURES=90a -DCMAKE_PREFIX_PATH="$root/.carry/prefix" &&
        cmake --build "$X/pkg-build" -j16 && ctest --test-dir "$X/pkg-build" --output-on-failure &&
        "$X/pkg-build/warpsmith_kernels_test" | tail -3; } >>"$OUT/export-cmake.log" 2>&1
      echo "cmake package: rc $?"; tail -4 "$OUT/export-cmake.log"
      for f in mxfp8_quantize_rowwise mxfp8_quantize_rowwise__floor; do
        "$X/pkg-build/warpsmith_kernels_test" --bench $f >>"$OUT/export-cmake-bench.jsonl" 2>&1
      done
      cat "$OUT/export-cmake-bench.jsonl"
      $ws export --problem mxfp8_quantize_rowwise --format torch --out "$X/torch" >"$OUT/export-torch.log" 2>&1
      ( cd "$X/torch" && python3 setup.py build_ext --inplace &&
        PYTHONPATH=. python3 test_ops.py --warpsmith "$root/build/warpsmith" &&
        PYTHONPATH=. python3 test_ops.py --bench --bench-json "$OUT/export-torch-bench.json" ) \
        >>"$OUT/export-torch.log" 2>&1
      echo "torch extension: rc $?"; grep -E "test_ops|median|exact" "$OUT/export-torch.log" | tail -12
      $ws export --problem mxfp8_quantize_rowwise --format bundle --out "$X/bundles" >"$OUT/export-bundle.log" 2>&1
      $ws verify "$X/bundles" >>"$OUT/export-bundle.log" 2>&1
      echo "verify: rc $?"; tail -12 "$OUT/export-bundle.log" ;;
    dashboard)
      # The dashboard during a running campaign: pages fetched live, and copies of the store taken
      # as it runs (served again elsewhere for screenshots).
      mkdir -p "$OUT/dash"
      $ws serve --port 8737 >"$OUT/dash/serve.log" 2>&1 &
      serve_pid=$!
      $ws campaign start --problems mxfp8_quantize_rowwise --seed starting \
        --budget "${DASH_BUDGET:-evaluations=10}" >"$OUT/dash/campaign.log" 2>&1 &
      camp_pid=$!
      for i in 1 2 3 4 5 6; do
        sleep 12
        for page in / /campaigns /campaigns/1 /problems/mxfp8_quantize_rowwise /api/leaderboard; do
          curl -s -m 10 "http://127.0.0.1:8737$page" >"$OUT/dash/snap$i$(echo "$page" | tr / _).html"
        done
        python3 -c "
import sqlite3,sys; s=sqlite3.connect(sys.argv[1]); d=sqlite3.connect(sys.argv[2]); s.backup(d)
" "$WS_DIR/warpsmith.db" "$OUT/dash/store-$i.db"
        kill -0 $camp_pid 2>/dev/null || break
      done
      wait $camp_pid; echo "campaign: rc $?"; tail -5 "$OUT/dash/campaign.log"
      kill $serve_pid; wait $serve_pid 2>/dev/null
      ( cd "$OUT" && tar czf dash.tgz dash && rm -rf dash ) ;;
    multigpu)
      # Scale-out on one host: the same campaign timed on one GPU, then on GPUS (default 0,1),
      # each in a fresh workspace; evaluations per GPU-minute and the two leaderboards.
      for g in 0 "${GPUS:-0,1}"; do
        W="$WS_DIR-gpus-${g//,/_}"; rm -rf "$W"
        start=$(date +%s.%N)
        build/warpsmith --workspace "$W" campaign start --problems "${MG_PROBLEMS:-router_topk_sigmoid_grouped}" \
          --seed starting --gpus "$g" --budget "${MG_BUDGET:-evaluations=16}" \
          >"$OUT/multigpu-$g.log" 2>&1 || status=1
        end=$(date +%s.%N)
        build/warpsmith --workspace "$W" campaign status --json >"$OUT/multigpu-$g-status.json"
        build/warpsmith --workspace "$W" leaderboard --json >"$OUT/multigpu-$g-leaderboard.json"
        python3 -c "
import sqlite3,sys,json; db=sqlite3.connect(sys.argv[1])
print(json.dumps({'gpus': sys.argv[2], 'wall_s': float(sys.argv[4]) - float(sys.argv[3])}))" \
          "$W/warpsmith.db" "$g" "$start" "$end" | tee "$OUT/multigpu-$g-wall.json"
        build/warpsmith --workspace "$W" leaderboard | head -8
      done ;;
    sweep)
      # Knob settings of one kernel through the evaluator, without hidden shapes (not ranked):
      # SWEEP="CHUNKS=2 THREADS=256;CTAS_PER_SM=4" (settings split by ';'), SWEEP_KERNEL,
      # SWEEP_PROBLEM, SWEEP_SETS (e.g. "rounding=rceil rounding=floor"; a setting's pairs joined
      # by +: "rounding=rceil+variant=clamped"). SWEEP_CONTROL=0 leaves out the default knobs;
      # SWEEP_HIDDEN=1 adds the hidden shapes (a setting about to become the default);
      # SWEEP_WHERE="M <= 128" takes only the bench shapes where it holds (eval --bench-where).
      # A variant "@file=PATH [KNOB=V ...]" evaluates another kernel file (an earlier commit's
      # kernel saved in the tree: a regression check against the controls of the same call).
      sp=${SWEEP_PROBLEM:-mxfp8_quantize_rowwise}
      run_sweep "$sp" "${SWEEP_SETS:--}" "${SWEEP:-}" "${SWEEP_HIDDEN:-0}" "sweep-$sp" \
        "${SWEEP_KERNEL:-}" "${SWEEP_WHERE:--}" ;;
    queue)
      # The sweep queue (kernels/sweeps.txt, or SWEEP_QUEUE) in order from entry QUEUE_FROM
      # (default 1), each entry with its own control, starting no evaluation after QUEUE_BUDGET_S
      # seconds (default 480: one GEMM evaluation takes up to ~100 s, a call at most 600); then
      # bench/sweep_table.py. The log says where a later call should resume.
      queue_file=${SWEEP_QUEUE:-kernels/sweeps.txt}
      n=0; resume=
      export SWEEP_DEADLINE=$(($(date +%s) + ${QUEUE_BUDGET_S:-480}))
      python3 scripts/sweep_queue.py check "$queue_file" || { status=1; continue; }
      while IFS=$'\t' read -r qp qsets qvariants qhidden qwhere; do
        n=$((n + 1))
        (( n < ${QUEUE_FROM:-1} )) && continue
        if (( $(date +%s) >= SWEEP_DEADLINE )); then
          echo "queue: entry $n ($qp $qsets) not started: QUEUE_BUDGET_S reached"
          [[ -z ${resume:-} ]] && resume=$n && echo "queue: QUEUE_FROM=$n resumes here"
          continue
        fi
        echo "queue: entry $n: $qp [$qsets] $qvariants"
        run_sweep "$qp" "$qsets" "$qvariants" "$qhidden" "queue-$(printf %02d $n)-$qp" "" "$qwhere"
        if (( sweep_cut )) && [[ -z ${resume:-} ]]; then
          resume=$n && echo "queue: entry $n cut short; QUEUE_FROM=$n reruns it whole"
        fi
      done < <(python3 scripts/sweep_queue.py list "$queue_file")
      unset SWEEP_DEADLINE
      python3 bench/sweep_table.py "$OUT" --json "$OUT/sweep-table.json" \
        --command "scripts/gpu_session.sh queue ($queue_file)" | tee "$OUT/sweep-table.txt" ;;
    harness)
      # Our kernel timed by the peers' own harness (bench/profile/same_harness.py): each
      # parameter setting of HARNESS_PROBLEM (default mxfp8_quantize_rowwise; SETTINGS limits
      # them) is evaluated (--no-hidden, scratch kept, HARNESS_ARGS added), then its bench cases
      # are launched from Python and timed by the peers' protocol, beside the Triton peer for the
      # rowwise quantizer. JSON to $OUT/harness; the kept scratch is removed after.
      mkdir -p "$OUT/harness"
      p=${HARNESS_PROBLEM:-mxfp8_quantize_rowwise}; evs=()
      for v in $(wanted_variants "problems/$p/spec.json"); do
        setting "$p" "$v"
        # shellcheck disable=SC2086  # HARNESS_ARGS is a word list
        $ws eval "$p" "kernels/$p/kernel.cu" "${sets[@]}" ${HARNESS_ARGS:-} --no-hidden \
          --keep-scratch --json >"$OUT/harness/$key.eval.json" 2>"$OUT/harness/$key.eval.err"
        echo "harness $key: eval $(verdict "$OUT/harness/$key.eval.json")"
        evs+=("$OUT/harness/$key.eval.json")
      done
      python3 bench/profile/same_harness.py "$OUT/harness/$p.json" "${evs[@]}" || status=1
      for e in "${evs[@]}"; do drop_kept_scratch "$e"; done ;;
    ncu)
      # Nsight Compute on one evaluation's candidate runner, bench shapes only: NCU_PROBLEM
      # (default mxfp8_quantize_rowwise), NCU_KERNEL (default kernels/<problem>/kernel.cu),
      # NCU_ARGS (eval arguments: "--set rounding=floor --knob CHUNKS=4"). The evaluation runs
      # first as usual (--no-hidden, 3 timed launches, scratch kept); then its candidate job,
      # cut to the bench cases and 2 timed launches, runs again unsandboxed under ncu with the
      # SpeedOfLight section and DRAM / L2 counters for the plan's kernels. CSV to $OUT/ncu, named
      # after the problem and NCU_ARGS. For mxfp8_quantize_rowwise the Triton peer is profiled the
      # same way at the same shapes (bench/profile/rowwise_ncu.py), in its rounding mode.
      # NCU_SECTIONS: the ncu sections (default SpeedOfLight, with NCU_REPORT=1 also the stall,
      # source, compute and memory sections; NCU_METRICS adds metrics). NCU_REPORT=1 also keeps
      # the .ncu-rep (profile the first NCU_LAUNCHES launches, default 1: of a plan of several
      # launches only the first, which the stage then says) and writes its SASS source page
      # (per-instruction executions and stall samples; needs SourceCounters) and every collected
      # metric (--page raw) as CSV. NCU_PEER=1: the cuBLAS peer too (below).
      mkdir -p "$OUT/ncu"
      # With NCU_REPORT=1 the default sections include the stall reasons and SourceCounters, which
      # the source page's per-instruction stall samples need.
      dflt=SpeedOfLight
      [[ ${NCU_REPORT:-0} == 1 ]] &&
        dflt="SpeedOfLight WarpStateStats SourceCounters ComputeWorkloadAnalysis MemoryWorkloadAnalysis"
      sections=(); for sec in ${NCU_SECTIONS:-$dflt}; do sections+=(--section "$sec"); done
      p=${NCU_PROBLEM:-mxfp8_quantize_rowwise}
      # No '=' in the name: the device tool brings back no file whose name holds one.
      tag=$p$(echo "${NCU_ARGS:-}" | tr -c 'A-Za-z0-9_-' '_')
      metrics=dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,sm__warps_active.avg.pct_of_peak_sustained_active
      # The fabric between the two L2 partitions limits the memory-bound kernels (session 28:
      # about half of all L2 sector requests cross it, whatever their size).
      metrics+=,lts__ltcfabric2ltc_cycles_active.avg.pct_of_peak_sustained_elapsed
      metrics+=,lts__t_sectors_srcunit_tex.sum,lts__t_sectors_srcunit_ltcfabric.sum
      # NCU_METRICS: more metrics, comma-separated (e.g. the L2's request and sector counts by op).
      [[ -n ${NCU_METRICS:-} ]] && metrics+=",$NCU_METRICS"
      # shellcheck disable=SC2086  # NCU_ARGS is a word list
      $ws eval "$p" "${NCU_KERNEL:-kernels/$p/kernel.cu}" ${NCU_ARGS:-} --no-hidden --iterations 3 \
        --keep-scratch --json >"$OUT/ncu/$tag.eval.json" 2>"$OUT/ncu/$tag.eval.err"
      echo "ncu $tag: eval $(verdict "$OUT/ncu/$tag.eval.json")"
      if python3 bench/profile/ncu_job.py "$OUT/ncu/$tag.eval.json" "$OUT/ncu/$tag.job.json" \
           >"$OUT/ncu/$tag.kernels"; then
        rep=(--csv)
        if [[ ${NCU_REPORT:-0} == 1 ]]; then
          rep=(--launch-count "${NCU_LAUNCHES:-1}" -o "$OUT/ncu/$tag")
          runs=$(cat "$OUT/ncu/$tag.job.launches" 2>/dev/null || echo 1)
          if (( ${NCU_LAUNCHES:-1} < runs )); then
            echo "ncu $tag: one run of the plan makes $runs launches; the report holds the" \
              "first ${NCU_LAUNCHES:-1} (NCU_LAUNCHES=$runs for all)"
          fi
        fi
        ncu --clock-control none --kernel-name "regex:^($(cat "$OUT/ncu/$tag.kernels"))$" \
          "${sections[@]}" --metrics "$metrics" "${rep[@]}" \
          build/ws_runner run "$OUT/ncu/$tag.job.json" >"$OUT/ncu/$tag.log" 2>"$OUT/ncu/$tag.err" \
          || status=1
        if [[ ${NCU_REPORT:-0} == 1 ]]; then
          ncu --import "$OUT/ncu/$tag.ncu-rep" --csv >"$OUT/ncu/$tag.csv" 2>>"$OUT/ncu/$tag.err" \
            || status=1
          ncu --import "$OUT/ncu/$tag.ncu-rep" --page source --print-source sass --csv \
            >"$OUT/ncu/$tag.sass.csv" 2>>"$OUT/ncu/$tag.err" || status=1
          ncu --import "$OUT/ncu/$tag.ncu-rep" --page raw --csv >"$OUT/ncu/$tag.raw.csv" \
            2>>"$OUT/ncu/$tag.err" || status=1
          python3 bench/profile/ncu_source.py "$OUT/ncu/$tag.sass.csv" --top 30 \
            --json "$OUT/ncu/$tag.source.json" >"$OUT/ncu/$tag.source.txt" || status=1
          head -20 "$OUT/ncu/$tag.source.txt"
        else
          mv "$OUT/ncu/$tag.log" "$OUT/ncu/$tag.csv"
        fi
        python3 bench/profile/ncu_summary.py "$OUT/ncu/$tag.csv"
      else
        status=1
      fi
      # The profiled run's output dumps and the kept scratch must not travel back with the results.
      rm -rf "$OUT/ncu/ncu-run"
      drop_kept_scratch "$OUT/ncu/$tag.eval.json"
      # NCU_PEER=1 (fp8_rowwise_gemm, bf16_gemm): cuBLAS(Lt)'s kernel at the first bench shape,
      # profiled the same way (its first launch; the source page shows its SASS). NCU_PEER_MNK
      # ("64 7168 2048"): that shape instead.
      if [[ ${NCU_PEER:-0} == 1 && ( $p == fp8_rowwise_gemm || $p == bf16_gemm ) ]]; then
        dt=bf16; [[ $p == fp8_rowwise_gemm ]] && dt=fp8
        mnk=${NCU_PEER_MNK:-$(python3 -c "import json,sys; b=json.load(open(sys.argv[1]))['shapes']['bench'][0]; print(b['M'], b['N'], b['K'])" \
                "problems/$p/spec.json")}
        ptag=peer-cublas-$dt-${mnk// /x}
        # shellcheck disable=SC2086  # mnk is three words
        ncu --clock-control none --kernel-name regex:nvjet --launch-count 1 "${sections[@]}" \
          --metrics "$metrics" -o "$OUT/ncu/$ptag" python3 bench/profile/cublas_kernels.py "$dt" $mnk \
          >"$OUT/ncu/$ptag.log" 2>"$OUT/ncu/$ptag.err" || status=1
        ncu --import "$OUT/ncu/$ptag.ncu-rep" --csv >"$OUT/ncu/$ptag.csv" 2>>"$OUT/ncu/$ptag.err" || status=1
        ncu --import "$OUT/ncu/$ptag.ncu-rep" --page raw --csv >"$OUT/ncu/$ptag.raw.csv" \
          2>>"$OUT/ncu/$ptag.err" || status=1
        if [[ ${NCU_REPORT:-0} == 1 ]]; then
          ncu --import "$OUT/ncu/$ptag.ncu-rep" --page source --print-source sass --csv \
            >"$OUT/ncu/$ptag.sass.csv" 2>>"$OUT/ncu/$ptag.err" || status=1
          python3 bench/profile/ncu_source.py "$OUT/ncu/$ptag.sass.csv" --top 30 \
            --json "$OUT/ncu/$ptag.source.json" >"$OUT/ncu/$ptag.source.txt" || status=1
          head -20 "$OUT/ncu/$ptag.source.txt"
        fi
        python3 bench/profile/ncu_summary.py "$OUT/ncu/$ptag.csv"
      fi
      if [[ $p == mxfp8_quantize_rowwise ]]; then
        r=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1])).get('params', {}).get('rounding', 'rceil'))" \
              "$OUT/ncu/$tag.eval.json" 2>/dev/null || echo rceil)
        ncu --clock-control none --kernel-name regex:mx_quant_rows --section SpeedOfLight \
          --metrics "$metrics" --csv python3 bench/profile/rowwise_ncu.py "$r" \
          >"$OUT/ncu/peer-triton-$r.csv" 2>"$OUT/ncu/peer-triton-$r.err" || status=1
        python3 bench/profile/ncu_summary.py "$OUT/ncu/peer-triton-$r.csv"
      fi ;;
    timeline)
      # A plan's launches inside the timed graph (scripts/plan_timeline.py: per launch its first
      # and last CTA start, first wait return, first and last CTA end, after the run's start).
      # TIMELINE_PROBLEM (default moe_permute_quantize), TIMELINE_WHERE (a word list of
      # --bench-where expressions, one shape each; default "E==8 E==16"), TIMELINE_ARGS (more
      # eval arguments, default --set rounding=floor). Each: the instrumented copy evaluated with
      # its scratch kept, then its runner job rerun for the stamps it prints. Files to
      # $OUT/timeline.
      mkdir -p "$OUT/timeline"
      tp=${TIMELINE_PROBLEM:-moe_permute_quantize}
      python3 scripts/plan_timeline.py instrument "kernels/$tp/kernel.cu" \
        "$OUT/timeline/$tp.cu" || { status=1; continue; }
      for w in ${TIMELINE_WHERE:-E==8 E==16}; do
        tag=$tp-$(echo "$w" | tr -dc 'A-Za-z0-9')
        # shellcheck disable=SC2086  # TIMELINE_ARGS is a word list
        timeout 300 $ws eval "$tp" "$OUT/timeline/$tp.cu" ${TIMELINE_ARGS:---set rounding=floor} \
          --no-hidden --bench-where "$w" --keep-scratch --json >"$OUT/timeline/eval-$tag.json" \
          2>"$OUT/timeline/eval-$tag.err"
        echo "timeline $tp $w: eval $(verdict "$OUT/timeline/eval-$tag.json")"
        job=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["kept_scratch"])' \
          "$OUT/timeline/eval-$tag.json" 2>/dev/null)/candidate.job.json
        [[ -f $job ]] || { echo "timeline $w: no kept job"; status=1; continue; }
        timeout 300 build/ws_runner run "$job" >"$OUT/timeline/runner-$tag.out" \
          2>"$OUT/timeline/runner-$tag.err"
        python3 scripts/plan_timeline.py summarize "kernels/$tp/kernel.cu" \
          "$OUT/timeline/runner-$tag.out" --json "$OUT/timeline/timeline-$tag.json" || status=1
      done ;;
    trace)
      # Where a kernel hangs: scripts/trace_kernel.py copies TRACE_KERNEL (default
      # kernels/<TRACE_PROBLEM>/kernel.cu) with WS_WAIT_TRACE defined (a ws::mbar_wait stuck for
      # 2^32 clocks prints its barrier, parity and thread, then traps) and TRACE_KNOBS' values
      # declared ("PP=1 BN=128": a value the plan keeps from the tuner), evaluates it at the test
      # shapes with those knobs (TRACE_ARGS: more eval arguments, e.g. "--set form=fwd") keeping
      # the scratch, then runs the kept candidate job with ws_runner directly, whose output holds
      # the prints. Files to $OUT/trace.
      mkdir -p "$OUT/trace/k"
      tp=${TRACE_PROBLEM:-bf16_grouped_gemm}
      # shellcheck disable=SC2086  # TRACE_KNOBS is a word list
      python3 scripts/trace_kernel.py "${TRACE_KERNEL:-kernels/$tp/kernel.cu}" \
        "$OUT/trace/k/kernel.cu" ${TRACE_KNOBS:-} || { status=1; continue; }
      kargs=(); for kv in ${TRACE_KNOBS:-}; do kargs+=(--knob "$kv"); done
      # shellcheck disable=SC2086  # TRACE_ARGS is a word list
      timeout 600 $ws eval "$tp" "$OUT/trace/k/kernel.cu" "${kargs[@]}" ${TRACE_ARGS:-} \
        --no-hidden --no-bench --keep-scratch --json \
        >"$OUT/trace/eval.json" 2>"$OUT/trace/eval.err"
      echo "trace $tp ${TRACE_KNOBS:-}: eval $(verdict "$OUT/trace/eval.json")"
      job=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["kept_scratch"])' \
        "$OUT/trace/eval.json" 2>/dev/null)/candidate.job.json
      if [[ -f $job ]]; then
        timeout 300 build/ws_runner run "$job" >"$OUT/trace/runner.out" 2>"$OUT/trace/runner.err"
        echo "trace: ws_runner rc $?"
        grep -h "mbar_wait stuck" "$OUT/trace/runner.out" "$OUT/trace/runner.err" | sort | uniq -c |
          sort -rn | head -40
      else
        echo "trace: no kept candidate job"; tail -3 "$OUT/trace/eval.err"; status=1
      fi ;;
    libpair)
      # Our kernel beside its problem's library baseline (the spec's "baseline", cublaslt:...),
      # both through the evaluator, alternating (LIBPAIR_ROUNDS rounds, default 2: ours, library,
      # ours, library), bench shapes only, while nvidia-smi samples the SM clock and power every
      # 100 ms; then the problem's peer script. A power-bound kernel's time depends on how long
      # the GPU has been loaded, so only the same protocol compares. LIBPAIR_PROBLEMS (default
      # "fp8_rowwise_gemm bf16_gemm"); JSON to $OUT/libpair, bench/profile/libpair_table.py reads it.
      mkdir -p "$OUT/libpair"
      nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu \
        --format=csv,noheader,nounits -lms 100 >"$OUT/libpair/smi.csv" 2>&1 &
      smi=$!
      for p in ${LIBPAIR_PROBLEMS:-fp8_rowwise_gemm bf16_gemm}; do
        lib=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['baseline'])" \
                "problems/$p/spec.json")
        for r in $(seq "${LIBPAIR_ROUNDS:-2}"); do
          for who in ours lib; do
            k=kernels/$p/kernel.cu; [[ $who == lib ]] && k=$lib
            t0=$(date +%s.%N)
            $ws eval "$p" "$k" --no-hidden --json >"$OUT/libpair/$p.$who.$r.json" \
              2>"$OUT/libpair/$p.$who.$r.err"
            echo "$p $who $r $t0 $(date +%s.%N)" >>"$OUT/libpair/windows.txt"
            echo "libpair $p $who $r: $(verdict "$OUT/libpair/$p.$who.$r.json")"
          done
        done
        if [[ -f bench/peers/$p.py ]]; then
          t0=$(date +%s.%N)
          timeout 400 python3 "bench/peers/$p.py" "$OUT/libpair/$p.peers.json" \
            >"$OUT/libpair/$p.peers.log" 2>&1 || status=1
          echo "$p peers 1 $t0 $(date +%s.%N)" >>"$OUT/libpair/windows.txt"
        fi
      done
      kill "$smi" 2>/dev/null
      python3 bench/profile/libpair_table.py "$OUT/libpair" --json "$OUT/libpair/table.json" \
        | tee "$OUT/libpair/table.txt" || status=1 ;;
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
    bandwidth)
      # DRAM bandwidth by read:write mix and row fan-out (bench/profile/bandwidth_mix.cu), with
      # the nvcc of this machine: the floor of write-heavy kernels beside the probe's copy rate.
      nvcc -O3 -arch=sm_90a bench/profile/bandwidth_mix.cu -o "$OUT/bwmix" &&
        "$OUT/bwmix" >"$OUT/bandwidth_mix.json" && cat "$OUT/bandwidth_mix.json" || status=1
      rm -f "$OUT/bwmix" ;;
    floors)
      # Each memory-bound bench shape's floor (bench/stream_floor.py): a plain stream of the
      # bytes it must read and write, in its mix, on the evaluator's protocol; FLOOR_PROBLEMS
      # limits the problems. bench/kernel_table.py --floors joins it to a kernels run.
      # shellcheck disable=SC2086  # FLOOR_PROBLEMS is a word list
      python3 bench/stream_floor.py run "$OUT/floors.json" ${FLOOR_PROBLEMS:-} \
        --nvcc "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)" || status=1 ;;
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
if [[ -f $WS_DIR/warpsmith.db ]]; then
  python3 -c "
import sqlite3,sys; s=sqlite3.connect(sys.argv[1]); d=sqlite3.connect(sys.argv[2]); s.backup(d)
" "$WS_DIR/warpsmith.db" "$OUT/warpsmith.db" >/dev/null 2>&1 || echo "the store did not copy to \$OUT"
fi
( cd "$OUT" && ls *.log >/dev/null 2>&1 && tar czf logs.tgz *.log && rm -f *.log )
exit $status
