#!/usr/bin/env bash
# Sourced by scripts/gpu_session.sh (the `sweep` and `queue` stages); uses its $ws (the warpsmith
# command line) and $OUT. Tested by scripts/sweep_lib_test.sh.

# One knob sweep through the evaluator: problem $1, settings $2 (words, a setting's pairs joined by
# '+'; '-' for none), variants $3 (';'-separated, knobs by spaces), hidden shapes $4 (0/1); the eval
# JSON goes to $OUT/<$5>.tgz; $6: the kernel (default kernels/$1/kernel.cu). Each setting runs
# the default knobs first and again after its variants (SWEEP_CONTROL=0: neither), so a control
# timed cold (an entry's first evaluation can run a few percent slow) shows as the controls' drift
# and bench/sweep_table.py holds variants to both. A variant whose first word is @file=PATH
# evaluates that kernel file instead (e.g. the kernel as an earlier commit had it, for a regression
# check in the same call), with the rest of its words as knobs; its JSON names the file
# (kernel_file). SWEEP_SEED=N: every evaluation times the
# inputs of seed N (eval --input-seed, a paired comparison); SWEEP_SEED=drawn: one seed drawn
# for the sweep. Not the default: at fwd M256 one seed read 26.9-29.3 us over three evaluations
# and fresh inputs 26.5-30.4 (session 27), so the inputs are not what spreads those times.
run_sweep() {
  local sp=$1 sk=${6:-kernels/$1/kernel.cu} where=${7:--} set knobs key kv file
  local seed=${SWEEP_SEED:-fresh}
  [[ $seed == drawn ]] && seed=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
  local -a variants args controls=("")
  [[ ${SWEEP_CONTROL:-1} == 0 ]] && controls=()
  IFS=';' read -ra variants <<<"$3"
  mkdir -p "$OUT/sweep"
  sweep_cut=0
  [[ $seed != fresh ]] && echo "sweep: $sp: every evaluation's inputs from seed $seed"
  local -a again=()
  (( ${#controls[@]} && ${#variants[@]} )) && again=("@again")
  for set in $2; do
    for knobs in "${controls[@]}" "${variants[@]}" "${again[@]}"; do
      # SWEEP_DEADLINE (epoch seconds): no evaluation starts after it, so a call's time limit
      # cuts no evaluation halfway and the table still gets made.
      if [[ -n ${SWEEP_DEADLINE:-} ]] && (( $(date +%s) >= SWEEP_DEADLINE )); then
        echo "sweep: $sp: from setting '$set' variant '${knobs:-default}' on, not started: deadline"
        sweep_cut=1; break 2
      fi
      args=(); [[ $set != - ]] && for kv in ${set//+/ }; do args+=(--set "$kv"); done
      file=$sk
      if [[ $knobs == @again ]]; then
        key=$(echo "${set}_again" | sed "s/=/-/g; s/+/__/g")  # the control, after the variants
      else
        key=$(echo "${set}_${knobs// /_}" | sed "s/=/-/g; s/+/__/g; s|/|-|g")
        if [[ $knobs == @file=* ]]; then
          file=${knobs%% *}; file=${file#@file=}
          [[ $knobs == *" "* ]] && knobs=${knobs#* } || knobs=
        fi
        for kv in $knobs; do args+=(--knob "$kv"); done
      fi
      [[ $4 == 1 ]] || args+=(--no-hidden)
      [[ $where != - ]] && args+=(--bench-where "$where")
      [[ $seed != fresh ]] && args+=(--input-seed "$seed")
      $ws eval "$sp" "$file" "${args[@]}" --json >"$OUT/sweep/$sp$key.json" 2>/dev/null
      if [[ $file != "$sk" ]]; then  # name the file in the result, for bench/sweep_table.py
        python3 -c "
import json,sys; p=sys.argv[1]; j=json.load(open(p)); j['kernel_file']=sys.argv[2]
json.dump(j, open(p, 'w'))" "$OUT/sweep/$sp$key.json" "$file" 2>/dev/null
      fi
      python3 -c "
import json,sys; j=json.load(open(sys.argv[1]))
print(sys.argv[2], j.get('verdict'), ' '.join('%.2f' % c['timing']['median_us'] for c in j.get('cases', []) if 'timing' in c))" \
        "$OUT/sweep/$sp$key.json" "$sp$key"
    done
  done
  ( cd "$OUT" && tar czf "$5.tgz" sweep && rm -rf sweep )
}
