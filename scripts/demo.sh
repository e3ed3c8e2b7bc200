#!/usr/bin/env bash
# The main job: set up, build, then evaluate the problem set's kernels (hand-tuned, baseline) and
# show the leaderboard. On a machine without a GPU everything but running kernels happens, and
# the output says so.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
ws=build/warpsmith
$ws problems
for p in problems/*/spec.json; do
  name=$(basename "$(dirname "$p")")
  for kernel in "kernels/$name/kernel.cu" "problems/$name/baseline.cu"; do
    [[ -f $kernel ]] || continue
    for arch in sm_100a sm_90a; do
      # Blackwell code cannot run here: compile it and check its plan; run the Hopper build.
      extra=()
      [[ $arch == sm_100a ]] && extra=(--compile-only)
      echo "== $name: $kernel ($arch)"
      $ws eval "$name" "$kernel" --arch "$arch" "${extra[@]}"
    done
  done
done
$ws leaderboard
