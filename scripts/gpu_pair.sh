#!/usr/bin/env bash
# On a two-GPU machine: two stage lists of scripts/gpu_session.sh at once, one per GPU, each with
# its own workspace and output folder ($OUT/gpu0, $OUT/gpu1), each cut at PAIR_LIMIT seconds.
# Run from the tree gpu_remote.sh set up. Usage: scripts/gpu_pair.sh "STAGES0" "STAGES1"
set -uo pipefail
OUT=${OUT:-/tmp/ws_out}
limit=${PAIR_LIMIT:-560}
for g in 0 1; do
  stages=$([[ $g == 0 ]] && echo "$1" || echo "${2:-}")
  [[ -z $stages ]] && continue
  mkdir -p "$OUT/gpu$g"
  # shellcheck disable=SC2086  # the stage list splits into words
  CUDA_VISIBLE_DEVICES=$g OUT="$OUT/gpu$g" WS_DIR="/tmp/ws_g$g" \
    timeout -k 5 "$limit" scripts/gpu_session.sh $stages >"$OUT/gpu$g/session.log" 2>&1 &
done
wait
for g in 0 1; do
  [[ -f $OUT/gpu$g/session.log ]] || continue
  echo "===== gpu$g"; grep -v "^\s*$" "$OUT/gpu$g/session.log" | tail -${PAIR_TAIL:-60}
done
# Only a few files come back from the GPU machine: everything travels as one archive, without
# files over 12 MB (an archive over 16 MB does not come back at all); the log names those left.
( cd "$OUT" || exit
  find gpu0 gpu1 -type f -size +12M 2>/dev/null | sed 's/^/pair: left out (over 12 MB): /'
  find gpu0 gpu1 -type f -size -12M 2>/dev/null >/tmp/pair.list
  tar czf /tmp/pair.tgz -T /tmp/pair.list; rm -rf gpu0 gpu1; mv /tmp/pair.tgz . )
