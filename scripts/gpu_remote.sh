#!/usr/bin/env bash
# On the GPU machine: runs scripts/gpu_session.sh from the source carried in .carry/src (see
# scripts/carry.sh DEST), at the path the binaries were built at.
# Usage (repository root of the copied tree): .carry/src/scripts/gpu_remote.sh STAGE...
set -uo pipefail
carry=$(cd "$(dirname "$0")/../.." && pwd)
built_at=$(grep -a -m1 -oE '/[A-Za-z0-9_./-]+/problems' "$carry/warpsmith" | head -1 | sed 's|/problems$||')
mkdir -p "$(dirname "$built_at")"
[[ -e $built_at ]] || ln -sfn "$carry/src" "$built_at"
ln -sfn "$carry" "$carry/src/.carry"
cd "$built_at" && exec scripts/gpu_session.sh "$@"
