#!/usr/bin/env bash
# On the GPU machine: runs scripts/gpu_session.sh from the source carried in .carry/src (see
# scripts/carry.sh DEST), moved to the path the binaries were built at, with the binaries as its
# .carry/ (the binaries find problems/ relative to their own location).
# Usage (repository root of the copied tree): .carry/src/scripts/gpu_remote.sh STAGE...
#    or: .carry/src/scripts/gpu_remote.sh --pair "STAGES0" "STAGES1"
set -uo pipefail
carry=$(cd "$(dirname "$0")/../.." && pwd)
built_at=$(grep -a -m1 -oE '/[A-Za-z0-9_./-]+/problems' "$carry/warpsmith" | head -1 | sed 's|/problems$||')
if [[ ! -d $built_at/.carry ]]; then
  rm -rf "$built_at" && mkdir -p "$(dirname "$built_at")"
  mv "$carry/src" "$built_at" && mv "$carry" "$built_at/.carry"
fi
cd "$built_at" || exit 2
# --pair "STAGES0" "STAGES1": both GPUs of a two-GPU machine at once (scripts/gpu_pair.sh).
[[ ${1:-} == --pair ]] && { shift; exec scripts/gpu_pair.sh "$@"; }
exec scripts/gpu_session.sh "$@"
