#!/usr/bin/env bash
# Which hand-tuned kernels compile to other SASS than at REV (e.g. the tree of their last H200
# timing): those need timing again, the rest cannot have moved. Every kernel, every parameter
# setting its SASS claims cover, both architectures (scripts/check_sass.py --sass-dir on a
# worktree at REV and on this tree, then a diff of the normalized listings).
# Usage: scripts/sass_since.sh REV [build/warpsmith]   (from anywhere in the checkout)
# Last line: KERNELS=problem,... for `scripts/gpu_session.sh kernels`.
set -euo pipefail
rev=${1:?usage: scripts/sass_since.sh REV [WARPSMITH]}
root=$(cd "$(dirname "$0")/.." && pwd)
ws=$(realpath "${2:-$root/build/warpsmith}")
work=$(mktemp -d)
trap 'git -C "$root" worktree remove --force "$work/tree" >/dev/null 2>&1; rm -rf "$work"' EXIT
git -C "$root" worktree add -q --detach "$work/tree" "$rev"
for side in old new; do
  tree=$root; [[ $side == old ]] && tree=$work/tree
  # One workspace for both: the compile cache is keyed by content, so unchanged kernels compile once.
  python3 "$root/scripts/check_sass.py" --warpsmith "$ws" --root "$tree" --work "$root/build/sass-check" \
    --sass-dir "$work/$side" >"$work/$side.log" 2>&1 ||
    { echo "sass_since: check_sass.py failed on the $side tree:"; tail -5 "$work/$side.log"; exit 1; }
done
changed=0 problems=()
for f in "$work"/new/*.sass; do
  b=$(basename "$f")
  if [[ ! -f $work/old/$b ]]; then echo "new      ${b%.sass}"
  elif ! cmp -s "$f" "$work/old/$b"; then
    echo "changed  ${b%.sass} ($(wc -l <"$work/old/$b") -> $(wc -l <"$f") lines)"
  else continue
  fi
  changed=$((changed + 1))
  p=${b%%__*}
  [[ " ${problems[*]} " == *" $p "* ]] || problems+=("$p")
done
echo "sass_since: $changed of $(ls "$work"/new/*.sass | wc -l) kernel builds differ from $rev"
# The gpu_session.sh kernels stage's list for the next GPU call.
echo "KERNELS=$(IFS=,; echo "${problems[*]}")"
