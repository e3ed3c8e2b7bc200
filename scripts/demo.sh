#!/usr/bin/env bash
# The main job: set up, build, then run a small tuner campaign over mxfp8_quantize_rowwise (the
# tuner needs no LLM and no network), and show the leaderboard and the campaign's status. On a
# machine without a GPU the campaign compiles and validates every candidate but runs none, and
# says so.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
ws=build/warpsmith
$ws problems
extra=()
if [[ ! -e /dev/nvidiactl ]]; then
  echo "note: no NVIDIA GPU on this machine: the campaign compiles and validates candidates only;"
  echo "      nothing is run or timed, so nothing reaches the leaderboard"
  extra=(--compile-only)
fi
echo "== tuner campaign over mxfp8_quantize_rowwise"
$ws campaign start --problems mxfp8_quantize_rowwise --agent tuner \
  --budget evaluations=${WS_DEMO_EVALUATIONS:-24},wall=10m "${extra[@]}"
echo "== leaderboard"
$ws leaderboard
echo "== campaign status"
$ws campaign status
