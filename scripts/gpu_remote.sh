#!/usr/bin/env bash
# On the GPU machine: runs scripts/gpu_session.sh from the source carried in .carry/src (see
# scripts/carry.sh DEST), moved to the path the binaries were built at, with the binaries as its
# .carry/ (the binaries find problems/ relative to their own location).
# Usage (repository root of the copied tree): .carry/src/scripts/gpu_remote.sh STAGE...
#    or: .carry/src/scripts/gpu_remote.sh --pair "STAGES0" "STAGES1"
set -uo pipefail
# REQUIRE_GPU=TEXT: stop at once (exit 3) unless the GPU's name contains TEXT, e.g. H200, so a
# call that was lent another card spends no device time on readings meant for that one.
if [[ -n ${REQUIRE_GPU:-} ]]; then
  gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
  if [[ $gpu != *"$REQUIRE_GPU"* ]]; then
    echo "gpu_remote: this machine's GPU is '${gpu:-none}', not $REQUIRE_GPU: nothing run" >&2
    exit 3
  fi
fi
carry=$(cd "$(dirname "$0")/../.." && pwd)
built_at=$(grep -a -m1 -oE '/[A-Za-z0-9_./-]+/problems' "$carry/warpsmith" | head -1 | sed 's|/problems$||')
if [[ ! -d $built_at/.carry ]]; then
  rm -rf "$built_at" && mkdir -p "$(dirname "$built_at")"
  mv "$carry/src" "$built_at" && mv "$carry" "$built_at/.carry"
fi
cd "$built_at" || exit 2
# --pair "STAGES0" "STAGES1": both GPUs of a two-GPU machine at once (scripts/gpu_pair.sh).
if [[ ${1:-} == --pair ]]; then
  shift; scripts/gpu_pair.sh "$@"
else
  scripts/gpu_session.sh "$@"
fi
rc=$?
# The device tool brings back at most 8 files from $OUT (counting those in folders, e.g. the
# ncu stage's): past that, one archive of them all
# (.ncu-rep reports left out where the archive would pass 16 MiB).
if [[ -n ${OUT:-} ]] && (( $(find "$OUT" -type f | wc -l) > 8 )); then
  pack=/tmp/ws-out-$$.tgz name=out-$(date -u +%H%M%S).tgz
  tar czf "$pack" -C "$OUT" . &&
    { (( $(stat -c %s "$pack") <= 16 << 20 )) || tar czf "$pack" --exclude='*.ncu-rep' -C "$OUT" .; } &&
    find "$OUT" -mindepth 1 -delete && mv "$pack" "$OUT/$name" &&
    echo "gpu_remote: \$OUT packed into $name (more than 8 files)"
fi
exit $rc
