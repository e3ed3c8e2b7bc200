#!/usr/bin/env bash
# Times the input generation kernel of each named commit (default: HEAD) on this GPU
# (bench/profile/generate_rate.cu), one JSON line per commit.
# Usage: bench/profile/generate_rate.sh [REV...]   (from the repository root; needs git and nvcc)
#    REV may also be '.' (the working tree's files) or FILE.cu (the three sources already joined,
#    e.g. where the tree has no .git: git show REV:F for each of the three files, in order).
# ARCH (default native) is nvcc's -arch; BUILD_ONLY=1 builds and runs nothing (a CI test).
set -euo pipefail
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for rev in "${@:-HEAD}"; do
  src="$work/$(basename "$rev" | tr -c 'A-Za-z0-9_-' _).cu"
  if [[ $rev == . ]]; then
    cat problems/init.h evaluator/runner/digest.h evaluator/runner/runner_kernels.cu >"$src"
  elif [[ -f $rev ]]; then
    cp "$rev" "$src"
  else
    for f in problems/init.h evaluator/runner/digest.h evaluator/runner/runner_kernels.cu; do
      git show "$rev:$f"
    done >"$src"
  fi
  # The thread count the runner launches for: one per element, or one per pair where the
  # generator works by pairs (ws_init_pair_p, as in 04b954c). Past 2^21 elements every variant
  # launches the runner's cap of 8192 blocks.
  threads='(n)'
  grep -q ws_init_pair_p "$src" && threads='((n) + 63) / 64 * 32'
  "$nvcc" -O3 -std=c++17 --fmad=false -arch="${ARCH:-native}" -DGEN_SOURCES="\"$src\"" \
    -DGEN_THREADS\(n\)="$threads" -Ibench/profile bench/profile/generate_rate.cu -o "$work/gen"
  [[ ${BUILD_ONLY:-0} == 1 ]] && continue
  commit=$(git rev-parse --short "$rev" 2>/dev/null || basename "$rev" .cu)
  printf '{"rev": "%s", "commit": "%s", "result": %s}\n' "$rev" "$commit" "$("$work/gen")"
done
