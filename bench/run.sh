#!/usr/bin/env bash
# Benchmarks one problem on the GPU at hand: the hand-tuned kernel and the baseline through
# `warpsmith eval` in every value of the problem's parameter, then the peers a user would otherwise
# call (bench/peers/PROBLEM.py, when present), in the same run; bench/report.py merges everything
# into one JSON with the GPU, driver, date and command.
# Usage: bench/run.sh PROBLEM PARAM VALUE... ; writes $OUT/bench-PROBLEM.json
set -uo pipefail
cd "$(dirname "$0")/.."
problem=$1 param=$2
shift 2
OUT=${OUT:-/tmp/ws_bench}
mkdir -p "$OUT"
ws="build/warpsmith --workspace $OUT/ws"
status=0
$ws device probe --json >"$OUT/probe.json" || status=1
for value in "$@"; do
  for kernel in "kernels/$problem/kernel.cu" "problems/$problem/baseline.cu"; do
    label=$(basename "$(dirname "$kernel")")
    [[ $label == "$problem" ]] && label=$(basename "$kernel" .cu)
    $ws eval "$problem" "$kernel" --set "$param=$value" --json \
      >"$OUT/eval-$label-$value.json" || status=1
  done
done
if [[ -f bench/peers/$problem.py ]]; then
  python3 "bench/peers/$problem.py" "$OUT/peers.json" 2>&1 | grep -v -i warning || status=1
fi
python3 bench/report.py "$OUT" "$problem" "bench/run.sh $problem $param $*" \
  >"$OUT/bench-$problem.json" || status=1
python3 -c "import json,sys; [print(r) for r in json.load(open(sys.argv[1]))['table']]" \
  "$OUT/bench-$problem.json"
exit $status
